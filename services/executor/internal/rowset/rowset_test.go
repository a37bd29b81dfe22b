package rowset

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestValue(t *testing.T) {
	for _, tc := range []struct {
		in, want any
	}{
		{nil, nil},
		{int64(7), int64(7)},
		{2.5, 2.5},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{"héllo", "héllo"},
		{[]byte{0, 0xff}, Blob{Type: "blob", Hex: "00ff", Bytes: 2}},
		{time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC), "2024-01-05"},
		{time.Date(2024, 1, 5, 13, 4, 5, 500_000_000, time.UTC), "2024-01-05 13:04:05.5"},
	} {
		got, err := Value(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Value(%#v) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	if _, err := Value("a\xffb"); !errors.Is(err, ErrInvalidUTF8) {
		t.Errorf("invalid UTF-8: err = %v", err)
	}
}

func TestText(t *testing.T) {
	for in, want := range map[any]string{
		nil:                   "NULL",
		"two\nlines\ttab":     `two\nlines\ttab`,
		"bell\a":              `bell\u0007`,
		int64(-3):             "-3",
		1e21:                  "1e+21",
		0.1:                   "0.1",
		NewBlob([]byte{1, 2}): `{"type":"blob","hex":"0102","bytes":2}`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%#v) = %q, want %q", in, got, want)
		}
	}
}

func TestAdd(t *testing.T) {
	s := New(nil, Limits{MaxRows: 2, MaxBytes: 1000})
	for i := range 2 {
		if more, err := s.Add([]any{int64(i)}); !more || err != nil {
			t.Fatalf("row %d: %v, %v", i, more, err)
		}
	}
	if s.Bytes != 8 { // "[0]," and "[1],"
		t.Errorf("bytes = %d", s.Bytes)
	}
	var tl *TooLargeError
	if _, err := s.Add([]any{int64(2)}); !errors.As(err, &tl) || tl.By != ByRows || tl.Rows != 2 {
		t.Fatalf("third row: %v", err)
	}

	s = New(nil, Limits{MaxRows: 10, MaxBytes: 10, Truncate: true})
	if more, err := s.Add([]any{"12345"}); !more || err != nil {
		t.Fatal(more, err)
	}
	if more, err := s.Add([]any{"12345"}); more || err != nil || !s.Truncated || s.TruncatedBy[0] != ByBytes || len(s.Rows) != 1 {
		t.Fatalf("truncation: %v, %v, %+v", more, err, s)
	}
}
