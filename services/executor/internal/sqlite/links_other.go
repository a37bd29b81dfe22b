//go:build !unix

package sqlite

import "os"

// hardLinks is the number of names a file has; 1 where the platform does
// not say.
func hardLinks(os.FileInfo) uint64 { return 1 }
