//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// hardLinks is the number of names a file has.
func hardLinks(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
