package chart

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// result is a two-column result k, v with one row per value.
func result(values ...any) contracts.Artifact {
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{Columns: []contracts.Column{{Name: "k"}, {Name: "v"}}}}
	for i, v := range values {
		art.Data = append(art.Data, []any{fmt.Sprint("k", i), v})
	}
	return art
}

// TestChartNumericThreshold pins the numeric rule of a y column: more than
// 80 % of its non-null values read as numbers, or the chart is refused as
// chart_column_not_numeric.
func TestChartNumericThreshold(t *testing.T) {
	spec := contracts.ChartSpec{Type: "bar", X: "k", Y: []string{"v"}, Caption: "c"}
	for _, c := range []struct {
		name    string
		values  []any
		numeric bool
	}{
		{"all numbers", []any{1.0, "2", 3.5}, true},
		{"five of six", []any{1.0, 2.0, 3.0, 4.0, "5", "n/a"}, true},
		{"nulls do not count", []any{1.0, nil, nil, 2.0}, true},
		{"four of five is not more than 80 %", []any{1.0, 2.0, 3.0, 4.0, "n/a"}, false},
		{"three of five", []any{1.0, 2.0, 3.0, "x", "y"}, false},
		{"all null", []any{nil, nil}, false},
	} {
		_, err := Decide(spec, result(c.values...))
		var r *contracts.Problem
		if (err == nil) != c.numeric || err != nil && (!errors.As(err, &r) || r.Code != contracts.RefuseChartColumnNotNumeric) {
			t.Errorf("%s: %v, want numeric %v", c.name, err, c.numeric)
		}
	}
}

// TestALineWithOneNullIsDrawnWithoutIt is the case the three old rules
// disagreed on: ten rows, one NULL. The server's rule accepts the chart, so
// the decision draws the series and names the one point it leaves out.
func TestALineWithOneNullIsDrawnWithoutIt(t *testing.T) {
	d, err := Decide(contracts.ChartSpec{Type: "line", X: "k", Y: []string{"v"}},
		result(12.0, 15.0, nil, 9.0, 11.0, 14.0, "13", 10.0, 16.0, 8.0))
	if err != nil {
		t.Fatal(err)
	}
	want := contracts.ChartDecision{Rule: Rule, Series: []string{"v"}, Rows: 10,
		Dropped: []contracts.ChartDrop{{Row: 2, Column: "v", Why: contracts.ChartDropNull}}}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("decision %+v, want %+v", d, want)
	}
}

// TestDecideNamesEveryPointNotDrawn: text the numeric rule tolerates, NaN
// and infinities are points not drawn; a scatter row whose x is not a
// number is dropped once, under x.
func TestDecideNamesEveryPointNotDrawn(t *testing.T) {
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{Columns: []contracts.Column{{Name: "x"}, {Name: "a"}, {Name: "b"}}}}
	art.Data = [][]any{
		{1.0, 1.0, 2.0}, {2.0, "NaN", 3.0}, {3.0, 4.0, "Inf"}, {4.0, 5.0, 6.0}, {5.0, 6.0, 7.0},
		{6.0, 7.0, 8.0}, {7.0, 8.0, 9.0}, {8.0, 9.0, 1.0}, {9.0, 1.0, 2.0}, {"n/a", 2.0, 3.0},
	}
	d, err := Decide(contracts.ChartSpec{Type: "scatter", X: "x", Y: []string{"a", "b"}}, art)
	if err != nil {
		t.Fatal(err)
	}
	want := []contracts.ChartDrop{
		{Row: 1, Column: "a", Why: contracts.ChartDropNotANumber},
		{Row: 2, Column: "b", Why: contracts.ChartDropNotANumber},
		{Row: 9, Column: "x", Why: contracts.ChartDropNotANumber},
	}
	if !reflect.DeepEqual(d.Dropped, want) || !reflect.DeepEqual(d.Series, []string{"a", "b"}) {
		t.Errorf("decision %+v, want dropped %+v", d, want)
	}
	// A bar chart of the same rows keeps the text x as a category.
	d, err = Decide(contracts.ChartSpec{Type: "bar", X: "x", Y: []string{"a"}}, art)
	if err != nil || len(d.Dropped) != 1 || d.Dropped[0].Row != 1 {
		t.Errorf("bar: %+v %v", d, err)
	}
}

// TestDecideRefusesWhatTheRowsCannotCarry: each refusal names its code and
// says how to present the answer instead.
func TestDecideRefusesWhatTheRowsCannotCarry(t *testing.T) {
	two := result(1.0, 2.0)
	for _, c := range []struct {
		name string
		spec contracts.ChartSpec
		art  contracts.Artifact
		code contracts.Code
	}{
		{"unknown type", contracts.ChartSpec{Type: "radar", X: "k", Y: []string{"v"}}, two, contracts.RefuseChartShapeMismatch},
		{"no y", contracts.ChartSpec{Type: "bar", X: "k"}, two, contracts.RefuseChartShapeMismatch},
		{"missing column", contracts.ChartSpec{Type: "bar", X: "month", Y: []string{"v"}}, two, contracts.RefuseChartColumnNotInResult},
		{"one row", contracts.ChartSpec{Type: "bar", X: "k", Y: []string{"v"}}, result(1.0), contracts.RefuseChartTooFewRows},
		{"pie of two", contracts.ChartSpec{Type: "pie", X: "k", Y: []string{"v", "v"}}, two, contracts.RefuseChartShapeMismatch},
		{"scatter over text", contracts.ChartSpec{Type: "scatter", X: "k", Y: []string{"v"}}, two, contracts.RefuseChartShapeMismatch},
		{"text y", contracts.ChartSpec{Type: "bar", X: "k", Y: []string{"k"}}, two, contracts.RefuseChartColumnNotNumeric},
	} {
		_, err := Decide(c.spec, c.art)
		var r *contracts.Problem
		if !errors.As(err, &r) || r.Code != c.code || r.Message == "" || r.Fix == "" {
			t.Errorf("%s: %v, want %s with a reason and a fix", c.name, err, c.code)
		}
	}
	_, err := Decide(contracts.ChartSpec{Type: "bar", X: "month", Y: []string{"v"}}, two)
	var r *contracts.Problem
	if errors.As(err, &r) && !strings.Contains(r.Fix, `"k", "v"`) {
		t.Errorf("a missing column's fix names the result's columns: %q", r.Fix)
	}
}

// TestValueReadsDecimalNumbersOnly: what a client's number reader takes
// alike is drawn; hexadecimal floats, infinities and NaN are not.
func TestValueReadsDecimalNumbersOnly(t *testing.T) {
	for v, ok := range map[any]bool{
		1.5: true, " 12 ": true, "-3.": true, ".5": true, "+1e3": true, "1E-2": true,
		"0x1p-2": false, "Inf": false, "-Infinity": false, "NaN": false, "1_000": false, "": false, "1e400": false, true: false,
	} {
		if _, got := Value(v); got != ok {
			t.Errorf("Value(%#v) = %v, want %v", v, got, ok)
		}
	}
}
