package cli

import (
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// isTerminal reports whether w is a character device: a person is reading,
// not a pipe or a file.
func isTerminal(w io.Writer) bool {
	if p, ok := w.(*plainWriter); ok {
		w = p.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// plainUnlessTerminal is f itself on a terminal, else a writer that spells
// the decorations of the human output in plain ASCII, so that a pipe, a
// file or a CI log gets bytes any tool reads.
func plainUnlessTerminal(f *os.File) io.Writer {
	if isTerminal(f) {
		return f
	}
	return &plainWriter{w: f}
}

// glyphs are the decorations the human output uses and their ASCII
// spelling. Data (a value a database holds) is printed as stored.
var glyphs = strings.NewReplacer(
	"✓", "ok", "✗", "x", "→", "->", "…", "...", "·", "-", "■", "#", "—", "--",
	"█", "#", "▉", "#", "▊", "#", "▋", "#", "▌", "#", "▍", "#", "▎", "#", "▏", "#", "▒", ".",
)

// plainWriter replaces glyphs on their way to w. JSON output goes to w
// directly (raw), so that no value is rewritten.
type plainWriter struct {
	mu   sync.Mutex
	w    io.Writer
	tail []byte // an incomplete UTF-8 sequence held for the next write
}

func (p *plainWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	buf := append(p.tail, b...)
	cut := len(buf)
	// Hold back a rune split across writes.
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	p.tail = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(p.w, glyphs.Replace(string(buf[:cut]))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// raw is the writer under any plainWriter: JSON is written as is.
func raw(w io.Writer) io.Writer {
	if p, ok := w.(*plainWriter); ok {
		return p.w
	}
	return w
}

// waitClock shows, on a terminal, how long the command has been waiting for
// the next entry of a run (a long model turn is otherwise silent): one line
// on w, rewritten in place each second and erased before anything else is
// printed. Off a terminal it prints nothing.
type waitClock struct {
	mu      sync.Mutex
	w       io.Writer
	on      bool
	since   time.Time
	shown   bool
	stop    chan struct{}
	stopped sync.Once
}

// after is how long a silence lasts before the clock shows it.
const waitClockAfter = 2 * time.Second

func newWaitClock(w io.Writer) *waitClock {
	c := &waitClock{w: w, on: isTerminal(w), since: time.Now(), stop: make(chan struct{})}
	if c.on {
		go c.run()
	}
	return c
}

func (c *waitClock) run() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.mu.Lock()
			if d := time.Since(c.since); d >= waitClockAfter {
				io.WriteString(c.w, "\r\x1b[K  … waiting for the model, "+d.Truncate(time.Second).String())
				c.shown = true
			}
			c.mu.Unlock()
		}
	}
}

// clear erases the clock's line and restarts the wait: call it before
// printing, and lock the returned unlock around the print.
func (c *waitClock) clear() (unlock func()) {
	c.mu.Lock()
	if c.shown {
		io.WriteString(c.w, "\r\x1b[K")
		c.shown = false
	}
	c.since = time.Now()
	return c.mu.Unlock
}

// close stops the clock and erases its line.
func (c *waitClock) close() {
	c.stopped.Do(func() {
		close(c.stop)
		c.clear()()
	})
}
