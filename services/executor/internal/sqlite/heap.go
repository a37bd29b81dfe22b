package sqlite

import (
	"fmt"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SQLite's length limit (SQLITE_LIMIT_LENGTH) holds one value, not what an
// aggregate holds while it builds one: json_group_array(hex(zeroblob(500000)))
// over 3,500 rows grew past 1.5 GB in 5 s before the value it built could be
// refused (issue 17, item 5). SQLite's hard heap limit holds every
// allocation: past it an allocation fails and the statement ends with
// SQLITE_NOMEM, which a read answers as result_too_large. The limit is one
// for the process — all SQLite connections share SQLite's heap — so it is the
// largest any engine asks for (HeapLimit). SQLite counts its heap only with
// memory statistics on, which must be set before SQLite initialises: this
// package's init does it, before any connection opens.

// MinHeapLimit is the smallest hard heap limit an engine sets.
const MinHeapLimit = 32 << 20

// HeapLimit is the hard heap limit, in bytes, an engine opened with
// operation memory opMem sets: an operation's memory per connection (a
// quarter of the executor's budget), at least MinHeapLimit; without a
// stated operation memory, that of the executor's default budget. SQLite
// counts what it holds, and a value grown by realloc is held twice for a
// moment, so the process can hold up to about twice the limit: half the
// budget.
func HeapLimit(opMem int64) int64 {
	if opMem <= 0 {
		opMem = defaultOperationMemory
	}
	return max(opMem*MaxConns, MinHeapLimit)
}

// defaultOperationMemory is the executor's share of its default budget per
// operation (512 MiB over 8 operations and 4 copies).
const defaultOperationMemory = 16 << 20

var heap struct {
	mu      sync.Mutex
	counted bool  // memory statistics turned on before SQLite initialised
	limit   int64 // the hard heap limit set so far
	err     error // why the heap cannot be limited
}

func init() {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.NewVaList(int32(1))
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_MEMSTATUS, va); rc != sqlite3.SQLITE_OK {
		heap.err = fmt.Errorf("sqlite: memory statistics could not be turned on (SQLite result %d: it initialised before this package): SQLite's heap cannot be limited", rc)
		return
	}
	heap.counted = true
}

// limitHeap raises the process's hard heap limit to at least n bytes. It
// fails where SQLite does not count its heap, so that no engine serves
// reads whose memory nothing holds.
func limitHeap(n int64) error {
	heap.mu.Lock()
	defer heap.mu.Unlock()
	if !heap.counted {
		return heap.err
	}
	if n <= heap.limit {
		return nil
	}
	tls := libc.NewTLS()
	defer tls.Close()
	sqlite3.Xsqlite3_hard_heap_limit64(tls, n)
	heap.limit = n
	return nil
}
