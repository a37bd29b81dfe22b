package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// describeCandidates bounds the relations a describe looks at to resolve a
// name: enough to tell one from several.
const describeCandidates = 10

// listTables answers GET /api/connections/:id/tables: one page of the
// connection's readable relations (OpInventory under the inspect profile),
// filtered by ?pattern= and continued by ?after=. Relations outside the
// readable patterns are counted, never named.
func (g *Gateway) listTables(c echo.Context) error {
	if _, err := actor(c); err != nil {
		return err
	}
	q := c.QueryParams()
	inv, d, err := g.inventory(c, contracts.ExecRequest{Pattern: q.Get("pattern"), After: q.Get("after"), MaxObjects: api.TablesPageSize}, c.Param("id"))
	if err != nil {
		return err
	}
	out := api.TablesResponse{ConnectionID: d.ID, Tables: make([]api.TableEntry, 0, len(inv.Relations)), Total: inv.Total,
		Unreadable: inv.Unreadable, Next: inv.Next, Truncated: inv.Truncated}
	for _, r := range inv.Relations {
		e := api.TableEntry{Schema: r.Schema, Name: r.Name, Kind: string(r.Kind)}
		if r.Stats != nil {
			rows := r.Stats.Rows
			e.Rows = &rows
		}
		out.Tables = append(out.Tables, e)
	}
	return c.JSON(http.StatusOK, out)
}

// describeTable answers GET /api/connections/:id/tables/:table: one readable
// relation, named as name or schema.name, described in full. A name no
// readable relation has is 404 (a hidden relation answers exactly as a
// missing one); a name found in several schemas is 409 with the choices.
func (g *Gateway) describeTable(c echo.Context) error {
	if _, err := actor(c); err != nil {
		return err
	}
	name, err := unescapedParam(c, "table")
	if err != nil {
		return err
	}
	if strings.TrimSpace(name) == "" {
		return badRequest(contracts.CodeBadRequest, "the request names no table", "name one as name or schema.name")
	}
	inv, d, err := g.inventory(c, contracts.ExecRequest{Table: name, MaxObjects: describeCandidates}, c.Param("id"))
	if err != nil {
		return err
	}
	rels := inv.Relations
	if len(rels) > 1 {
		// Names compare case-insensitively; an exact spelling picks one.
		var exact []contracts.Relation
		for _, r := range rels {
			if r.Name == name || r.QualifiedName() == name {
				exact = append(exact, r)
			}
		}
		if len(exact) > 0 {
			rels = exact
		}
	}
	switch {
	case len(rels) == 0:
		return fail(http.StatusNotFound, api.CodeTableNotFound,
			fmt.Sprintf("connection %s has no readable relation named %q", d.ID, name),
			"GET "+api.TablesPath(d.ID)+" (sonde tables "+d.ID+") lists the readable relations")
	case len(rels) > 1:
		names := make([]string, len(rels))
		for i, r := range rels {
			names[i] = r.QualifiedName()
		}
		return fail(http.StatusConflict, api.CodeAmbiguousTable,
			fmt.Sprintf("%q names %d relations of connection %s: %s", name, inv.Total, d.ID, strings.Join(names, ", ")),
			"name it as schema.name")
	}
	return c.JSON(http.StatusOK, api.DescribeResponse{ConnectionID: d.ID, Relation: rels[0]})
}

// inventory asks the executor of connection id for an inventory shaped by
// req, under the inspect profile.
func (g *Gateway) inventory(c echo.Context, req contracts.ExecRequest, id string) (*contracts.Inventory, contracts.ConnectionDescriptor, error) {
	ctx := c.Request().Context()
	d, err := g.descriptor(ctx, id)
	if err != nil {
		return nil, d, err
	}
	req.StepID, req.ConnectionID, req.Profile = newQueryID(), d.ID, contracts.ProfileInspect
	reply, err := g.execOp(ctx, d.Engine, contracts.OpInventory, req)
	if err != nil {
		return nil, d, err
	}
	if err := replyError(c, reply); err != nil {
		return nil, d, err
	}
	if reply.Inventory != nil {
		return reply.Inventory, d, nil
	}
	// A large inventory travels in its artifact only.
	art, err := g.readArtifact(ctx, reply.Artifact.CorrelationID)
	if err != nil {
		return nil, d, err
	}
	if art.Inventory == nil {
		return nil, d, fmt.Errorf("gateway: inventory artifact %s holds no inventory", reply.Artifact.CorrelationID)
	}
	return art.Inventory, d, nil
}

// explain answers POST /api/explain: the estimating plan of one statement
// (OpExplain under the inspect profile), guarded exactly like
// POST /api/query and refused as it is; nothing is executed.
func (g *Gateway) explain(c echo.Context) error {
	if _, err := actor(c); err != nil {
		return err
	}
	var req api.ExplainRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	ctx := c.Request().Context()
	d, err := g.descriptor(ctx, req.ConnectionID)
	if err != nil {
		return err
	}
	reply, err := g.execOp(ctx, d.Engine, contracts.OpExplain,
		contracts.ExecRequest{StepID: newQueryID(), ConnectionID: d.ID, Profile: contracts.ProfileInspect, SQL: req.SQL})
	if err != nil {
		return err
	}
	if err := replyError(c, reply); err != nil {
		return err
	}
	if reply.Plan == nil {
		return fmt.Errorf("gateway: explain reply without a plan")
	}
	art, err := g.readArtifact(ctx, reply.Artifact.CorrelationID)
	if err != nil {
		return err
	}
	res := queryResponse(art, reply)
	return c.JSON(http.StatusOK, api.ExplainResponse{ConnectionID: d.ID, SQL: req.SQL, Plan: *reply.Plan, Columns: res.Columns, Rows: res.Rows})
}

// unescapedParam is the path parameter name as the client meant it: the router
// matches the escaped path whenever the client escaped something (a table
// named "a b" or "x/y" arrives as a%20b or x%2Fy), and then hands the
// parameter over still escaped.
func unescapedParam(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if c.Request().URL.RawPath == "" {
		return v, nil
	}
	u, err := url.PathUnescape(v)
	if err != nil {
		return "", badRequest(contracts.CodeBadRequest, fmt.Sprintf("the %s in the path is not validly escaped", name),
			"escape the name with percent-encoding (encodeURIComponent)")
	}
	return u, nil
}
