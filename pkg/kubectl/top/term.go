package top

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Escape sequences: the alternate screen keeps the user's scrollback intact
// and is left on exit, so the shell comes back as it was.
const (
	enterScreen = "\x1b[?1049h\x1b[?25l\x1b[2J"
	leaveScreen = "\x1b[?25h\x1b[?1049l"
	clearEOL    = "\x1b[K"
	clearEOS    = "\x1b[J"
)

// Stats time the redraws: the whole redraw (frame from the model, render,
// write to the terminal) and its first part alone (the write waits for the
// terminal to read, which a loaded terminal emulator can make long).
type Stats struct {
	Frames                 int
	Total, Max             time.Duration
	RenderTotal, RenderMax time.Duration
	Nodes                  int // rows in the last frame
}

func (s *Stats) add(render, total time.Duration, nodes int) {
	s.Frames++
	s.Total += total
	s.Max = max(s.Max, total)
	s.RenderTotal += render
	s.RenderMax = max(s.RenderMax, render)
	s.Nodes = nodes
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (s Stats) String() string {
	n := time.Duration(max(s.Frames, 1))
	return fmt.Sprintf("top: %d frames, redraw avg %.2f ms, max %.2f ms (model+render avg %.2f ms, max %.2f ms), %d nodes in the last frame",
		s.Frames, ms(s.Total/n), ms(s.Max), ms(s.RenderTotal/n), ms(s.RenderMax), s.Nodes)
}

// loop is the live view: redraw on change (coalesced), on resize and every
// tick (ages, clock), quit on q. run puts the terminal in raw mode around
// serve, which only needs channels, a writer and a size, so it is tested
// without a terminal.
type loop struct {
	m           *Model
	dirty       chan struct{}
	out         io.Writer
	size        func() (width, height int, err error)
	recentErr   func() error // a watch error to show; nil when none
	minInterval time.Duration
	tick        time.Duration // 0: no periodic redraw
	stats       Stats
	buf         bytes.Buffer
	prev        []string // the lines on screen
	sticky      layout   // the widest columns so far (reset on resize)
}

func newTermLoop(m *Model, w *Watcher, dirty chan struct{}, out *os.File, minInterval time.Duration) *loop {
	return &loop{
		m: m, dirty: dirty, out: out, minInterval: minInterval, tick: time.Second,
		size:      func() (int, int, error) { return term.GetSize(int(out.Fd())) },
		recentErr: func() error { return w.RecentErr(30 * time.Second) },
	}
}

// run serves the live view on the terminal in (keys) and l.out (screen),
// restoring it however run ends, a panic included.
func (l *loop) run(ctx context.Context, in *os.File, w *Watcher) int {
	fd := int(in.Fd())
	saved, err := term.MakeRaw(fd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: raw terminal:", err)
		return 1
	}
	defer func() {
		_, _ = io.WriteString(l.out, leaveScreen)
		_ = term.Restore(fd, saved)
	}()
	_, _ = io.WriteString(l.out, enterScreen)

	keys := make(chan byte, 16)
	go func() {
		b := make([]byte, 64)
		for {
			n, err := in.Read(b)
			for _, k := range b[:n] {
				keys <- k
			}
			if err != nil {
				close(keys)
				return
			}
		}
	}()
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	resized := make(chan struct{}, 1)
	go func() {
		for range winch {
			select {
			case resized <- struct{}{}:
			default:
			}
		}
	}()
	synced := make(chan struct{})
	go func() {
		if w.WaitSynced(ctx) == nil {
			l.m.SetSynced()
		}
		close(synced)
	}()
	return l.serve(ctx, keys, resized, synced)
}

// serve draws at once, then on every change at most once per minInterval
// (a burst of events between two frames makes one frame), on resize, when
// the watches synced and every tick; q, Q, Ctrl-C or Ctrl-D return 0, the
// context's end 130.
func (l *loop) serve(ctx context.Context, keys <-chan byte, resized, synced <-chan struct{}) int {
	var tick <-chan time.Time
	if l.tick > 0 {
		t := time.NewTicker(l.tick)
		defer t.Stop()
		tick = t.C
	}
	var later <-chan time.Time // set while a coalesced redraw waits
	last := time.Time{}
	draw := func() {
		later = nil
		l.draw()
		last = time.Now()
	}
	draw()
	for {
		select {
		case <-ctx.Done():
			return 130
		case k, ok := <-keys:
			if !ok {
				keys = nil
				continue
			}
			switch k {
			case 'q', 'Q', 3 /* Ctrl-C */, 4 /* Ctrl-D */ :
				return 0
			case 12 /* Ctrl-L */ :
				l.clear()
				draw()
			}
		case <-synced:
			synced = nil
			draw()
		case <-l.dirty:
			if later != nil {
				continue
			}
			if wait := l.minInterval - time.Since(last); wait > 0 {
				later = time.After(wait)
				continue
			}
			draw()
		case <-later:
			draw()
		case <-resized:
			l.clear()
			draw()
		case <-tick:
			draw()
		}
	}
}

// draw renders the model and writes the lines that changed since the last
// frame (most do not: a tick changes the clock and the ages), each in place,
// in one write.
func (l *loop) draw() {
	start := time.Now()
	width, height, err := l.size()
	if err != nil {
		width, height = 80, 24
	}
	f := l.m.Frame(start)
	if l.recentErr != nil {
		if err := l.recentErr(); err != nil {
			f.Warning = "watch: " + err.Error()
		}
	}
	lines := Render(f, Options{Width: width, Height: height, Live: true, sticky: &l.sticky})
	rendered := time.Since(start)
	l.buf.Reset()
	for i, s := range lines {
		if i < len(l.prev) && l.prev[i] == s {
			continue
		}
		fmt.Fprintf(&l.buf, "\x1b[%d;1H", i+1)
		l.buf.WriteString(s)
		l.buf.WriteString(clearEOL)
	}
	if len(lines) < len(l.prev) {
		fmt.Fprintf(&l.buf, "\x1b[%d;1H", len(lines)+1)
		l.buf.WriteString(clearEOS)
	}
	l.prev = lines
	if l.buf.Len() > 0 {
		_, _ = l.out.Write(l.buf.Bytes())
	}
	l.stats.add(rendered, time.Since(start), f.Totals().Nodes)
}

// clear wipes the screen and forgets what is on it, so the next draw writes
// every line, with columns as wide as that frame needs.
func (l *loop) clear() {
	_, _ = io.WriteString(l.out, "\x1b[2J")
	l.prev = nil
	l.sticky = layout{}
}
