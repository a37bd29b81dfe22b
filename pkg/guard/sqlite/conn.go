package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"modernc.org/sqlite"
)

// ConnCompiler compiles on conn, a connection of modernc.org/sqlite's driver
// to the database statements are read for: auth stays installed as its
// authorizer after each Compile, so whoever holds conn installs the one it
// runs statements under before running them. Compile prepares the statement
// and finalizes it unexecuted (the driver's ColumnInfo).
func ConnCompiler(ctx context.Context, conn *sql.Conn) Compiler {
	return CompilerFunc(func(q string, auth sqlite.AuthorizerFn) (cols []string, err error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err = conn.Raw(func(dc any) error {
			reg, ok := dc.(sqlite.AuthorizerRegisterer)
			if !ok {
				return fmt.Errorf("sqlite guard: connection %T offers no authorizer", dc)
			}
			ci, ok := dc.(interface {
				ColumnInfo(string) ([]sqlite.ColumnInfo, error)
			})
			if !ok {
				return fmt.Errorf("sqlite guard: connection %T cannot compile without running", dc)
			}
			if err := reg.RegisterAuthorizer(auth); err != nil {
				return err
			}
			info, err := ci.ColumnInfo(q)
			if err != nil {
				return err
			}
			cols = make([]string, len(info))
			for i, c := range info {
				cols[i] = c.Name
			}
			return nil
		})
		return cols, err
	})
}
