// Package supervise runs child processes of `sonde serve` and keeps them
// running: a child that exits (a crash in native code included) is logged
// with its exit status or signal and started again after a backoff; on
// shutdown each child gets SIGTERM and, after a grace period, SIGKILL. A
// child ends when its parent does: on Linux through the parent-death signal,
// everywhere because its stdin, a pipe only the parent holds open, reaches
// end of file (ParentContext).
//
// The child tells the parent it is ready by writing one line to file
// descriptor 3 (ReportReady); until it has, and after it exits, Ready
// answers an error that /readyz shows.
package supervise

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Spec's timings.
const (
	DefaultGrace       = 10 * time.Second
	DefaultMinBackoff  = 250 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
	DefaultStableAfter = time.Minute
)

// readyLine is what a child writes to descriptor 3 once it serves.
const readyLine = "ready"

// Spec describes one supervised child.
type Spec struct {
	// Name identifies the child in logs and readiness errors.
	Name string
	// Path is the executable; Args its arguments (without the program name).
	Path string
	Args []string
	// Env is the child's whole environment. Secrets belong here, never in
	// Args, which other users of the machine can read (ps).
	Env []string
	// Stderr receives the child's stdout and stderr; nil means os.Stderr.
	Stderr io.Writer
	// Grace is how long a child has to exit after SIGTERM before SIGKILL.
	Grace time.Duration
	// MinBackoff is the first restart delay; it doubles per crash up to
	// MaxBackoff, and resets once a child has run StableAfter.
	MinBackoff, MaxBackoff, StableAfter time.Duration
}

// Process is one supervised child, started again whenever it exits until
// Stop.
type Process struct {
	spec Spec
	log  *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	ready    bool
	state    string // why it is not ready
	starts   int
	stopping bool
	readyCh  chan struct{} // closed on the first ready
	firstErr chan error    // the first run's exit before it was ready

	stop chan struct{}
	done chan struct{}
}

// Start starts the child and supervises it until Stop.
func Start(log *slog.Logger, spec Spec) *Process {
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	if spec.MinBackoff <= 0 {
		spec.MinBackoff = DefaultMinBackoff
	}
	if spec.MaxBackoff < spec.MinBackoff {
		spec.MaxBackoff = max(DefaultMaxBackoff, spec.MinBackoff)
	}
	if spec.StableAfter <= 0 {
		spec.StableAfter = DefaultStableAfter
	}
	if spec.Stderr == nil {
		spec.Stderr = os.Stderr
	}
	p := &Process{spec: spec, log: log.With("child", spec.Name), state: "starting",
		readyCh: make(chan struct{}), firstErr: make(chan error, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// WaitReady waits until the child first reports ready. It fails when the
// first child exits before it is ready (a configuration error, say), or when
// ctx ends.
func (p *Process) WaitReady(ctx context.Context) error {
	select {
	case <-p.readyCh:
		return nil
	case err := <-p.firstErr:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s is not ready: %w", p.spec.Name, ctx.Err())
	}
}

// Ready answers nil while a child is running and has reported ready, else
// why not.
func (p *Process) Ready() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready {
		return nil
	}
	return fmt.Errorf("%s is %s", p.spec.Name, p.state)
}

// PID is the running child's process id, or 0.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop ends supervision: the running child gets SIGTERM, and SIGKILL when
// it has not exited after the grace period. Stop returns once it has exited.
func (p *Process) Stop() {
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		<-p.done
		return
	}
	p.stopping = true
	cmd := p.cmd
	p.mu.Unlock()
	close(p.stop)
	if cmd != nil && cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			return
		case <-time.After(p.spec.Grace):
			p.log.Warn("child did not stop within the grace period; killing it", "pid", cmd.Process.Pid, "grace", p.spec.Grace)
			_ = cmd.Process.Kill()
		}
	}
	<-p.done
}

// loop starts the child, waits for it, and starts it again after a backoff.
// It runs on one locked OS thread: the parent-death signal fires when the
// thread that started the child exits, and a locked thread lives as long as
// the goroutine that holds it.
func (p *Process) loop() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(p.done)
	backoff := p.spec.MinBackoff
	for {
		began := time.Now()
		exit, wasReady, err := p.runOnce()
		ran := time.Since(began)
		p.mu.Lock()
		stopping := p.stopping
		first := p.starts == 1
		p.mu.Unlock()
		if stopping {
			p.setState(false, "stopped")
			if exit != nil {
				p.log.Info("child stopped", "exit", exitText(exit, err))
			}
			return
		}
		if first && !wasReady {
			p.firstErr <- fmt.Errorf("%s exited before it was ready: %s", p.spec.Name, exitText(exit, err))
		}
		if ran >= p.spec.StableAfter {
			backoff = p.spec.MinBackoff
		}
		p.setState(false, fmt.Sprintf("restarting after it exited (%s)", exitText(exit, err)))
		p.log.Error("child exited; restarting it", "exit", exitText(exit, err), "ran", ran.Round(time.Millisecond).String(), "restartIn", backoff.String())
		select {
		case <-time.After(backoff):
		case <-p.stop:
			p.setState(false, "stopped")
			return
		}
		backoff = min(2*backoff, p.spec.MaxBackoff)
	}
}

// runOnce runs one child to its end. exit describes how it ended.
func (p *Process) runOnce() (exit *os.ProcessState, wasReady bool, err error) {
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, false, err
	}
	defer lifeW.Close() // the child's stdin reaches EOF when the parent lets go
	readyR, readyW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		return nil, false, err
	}
	cmd := exec.Command(p.spec.Path, p.spec.Args...)
	cmd.Env = p.spec.Env
	cmd.Stdin = lifeR
	cmd.Stdout, cmd.Stderr = p.spec.Stderr, p.spec.Stderr
	cmd.ExtraFiles = []*os.File{readyW}
	cmd.SysProcAttr = sysProcAttr()
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		lifeR.Close()
		readyR.Close()
		readyW.Close()
		return nil, false, errors.New("stopping")
	}
	err = cmd.Start()
	lifeR.Close()
	readyW.Close()
	if err != nil {
		p.mu.Unlock()
		readyR.Close()
		return nil, false, fmt.Errorf("start: %w", err)
	}
	p.cmd = cmd
	p.starts++
	p.state = "starting"
	p.mu.Unlock()
	p.log.Info("child started", "pid", cmd.Process.Pid)

	readyDone := make(chan bool, 1)
	go func() {
		defer readyR.Close()
		sc := bufio.NewScanner(readyR)
		ok := false
		for sc.Scan() {
			if sc.Text() == readyLine && !ok {
				ok = true
				p.setState(true, "ready")
				p.log.Info("child ready", "pid", cmd.Process.Pid)
			}
		}
		readyDone <- ok
	}()
	err = cmd.Wait()
	p.setState(false, "exited")
	wasReady = <-readyDone // the pipe closes when the child is gone
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return cmd.ProcessState, wasReady, err
		}
	}
	return cmd.ProcessState, wasReady, errors.New(cmd.ProcessState.String())
}

func (p *Process) setState(ready bool, state string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ready, p.state = ready, state
	if ready {
		select {
		case <-p.readyCh:
		default:
			close(p.readyCh)
		}
	}
}

// exitText says how a child ended: "exit status 1", "signal: segmentation
// fault", or the error that kept it from starting.
func exitText(ps *os.ProcessState, err error) string {
	switch {
	case ps != nil:
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Exited() && ws.ExitStatus() == 2 {
			// Go's runtime exits 2 after a fatal signal in native code.
			return ps.String() + ", a crash (fatal signal or panic; its trace is in the log)"
		}
		return ps.String()
	case err != nil:
		return err.Error()
	}
	return "unknown"
}

// ParentContext is for the child: a context that ends when ctx does or when
// the parent goes away (stdin, the lifeline pipe, reaches end of file).
func ParentContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	return ctx, cancel
}

// ReportReady is for the child: it tells the parent it serves.
func ReportReady() error {
	f := os.NewFile(3, "ready")
	if f == nil {
		return errors.New("supervise: no readiness pipe (descriptor 3)")
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, readyLine); err != nil {
		return fmt.Errorf("supervise: report ready: %w", err)
	}
	return nil
}
