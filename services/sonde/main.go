// Command sonde is Sonde's all-in-one binary: `sonde serve` runs every service
// (or any subset) and `sonde ask` starts an investigation and shows it live.
package main

import (
	"os"

	"github.com/sondehq/sonde/services/sonde/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
