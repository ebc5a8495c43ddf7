package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is the relay under test, started by --relay-cmd in its own process
// group so that SIGTERM reaches it (and anything a wrapper script started).
type child struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{} // closed when Wait returned
	waitErr error
	rss     *rssSampler
}

// startChild runs cmdline with /bin/sh. A simple command is exec'd by the
// shell, so the rusage measured is the relay's own; a compound command
// (with ; & | and the like) is measured including the shell and whatever
// it waited for.
func startChild(cmdline, logPath string) (*child, error) {
	script := cmdline
	if !strings.ContainsAny(cmdline, ";&|<>()`\n") {
		script = "exec " + cmdline
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening relay log: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c := &child{cmd: cmd, done: make(chan struct{})}
	c.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting relay %q: %w", cmdline, err)
	}
	c.rss = &rssSampler{pgid: cmd.Process.Pid}
	go c.rss.run(100*time.Millisecond, c.done)
	go func() {
		c.waitErr = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// exited reports whether the relay has already stopped (it should not
// before the benchmark stops it).
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Usage is what the kernel accounted for the relay over its whole life.
type Usage struct {
	PeakRSSMiB  float64 // largest VmHWM sampled (see rss.go)
	CPUSeconds  float64
	ExitCode    int
	StopSeconds float64 // SIGTERM to exit
	Killed      bool    // did not stop within the grace period
}

// stop sends SIGTERM to the relay's process group, waits up to grace, then
// SIGKILLs it, and returns its resource usage.
func (c *child) stop(grace time.Duration) (Usage, error) {
	var u Usage
	c.rss.sample() // the peak while it worked, before shutdown
	t0 := time.Now()
	if !c.exited() {
		if err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return u, fmt.Errorf("sending SIGTERM to the relay: %w", err)
		}
		select {
		case <-c.done:
		case <-time.After(grace):
			u.Killed = true
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
	u.StopSeconds = round3(time.Since(t0).Seconds())
	st := c.cmd.ProcessState
	u.ExitCode = st.ExitCode()
	u.PeakRSSMiB = round3(float64(c.rss.peak.Load()) / 1024)
	// CPU time is the child's own (and its waited-for children's); unlike
	// ru_maxrss it is not inherited from this process (see rss.go).
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok {
		u.CPUSeconds = round3(tv(ru.Utime) + tv(ru.Stime))
	}
	return u, nil
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
