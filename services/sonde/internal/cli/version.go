package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is the version of this build, stamped by the Makefile's build
// target with -ldflags "-X github.com/sondehq/sonde/services/sonde/internal/cli.Version=…";
// "dev" for a build without it.
var Version = "dev"

// versionInfo is what sonde version --json prints.
type versionInfo struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Commit is the VCS revision Go recorded, when the build had one.
	Commit string `json:"commit,omitempty"`
}

func currentVersion() versionInfo {
	v := versionInfo{Version: Version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				v.Commit = s.Value
			}
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of this sonde binary",
		Long:  "version prints the version stamped at build (\"dev\" when none was), the Go version and the platform. sonde --version prints the version alone.",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			if jsonOut {
				return printJSON(cmd.OutOrStdout(), v)
			}
			line := fmt.Sprintf("sonde %s (%s, %s", v.Version, v.GoVersion, v.Platform)
			if v.Commit != "" {
				line += ", commit " + v.Commit
			}
			fmt.Fprintln(cmd.OutOrStdout(), line+")")
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, `print {"version","goVersion","platform","commit"} as JSON`)
	bindEnv(cmd)
	return cmd
}
