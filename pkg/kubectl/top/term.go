package top

import (
	"bytes"
	"context"
	"fmt"
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

// loop is the live view: raw terminal, redraw on change (coalesced), on
// resize and every second (ages, clock), quit on q.
type loop struct {
	m           *Model
	w           *Watcher
	dirty       chan struct{}
	in, out     *os.File
	minInterval time.Duration
	stats       Stats
	buf         bytes.Buffer
	prev        []string // the lines on screen
}

func (l *loop) run(ctx context.Context) int {
	fd := int(l.in.Fd())
	saved, err := term.MakeRaw(fd)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error: raw terminal:", err)
		return 1
	}
	// Restored however run ends, a panic included.
	defer func() {
		_, _ = l.out.WriteString(leaveScreen)
		_ = term.Restore(fd, saved)
	}()
	_, _ = l.out.WriteString(enterScreen)

	keys := make(chan byte, 16)
	go func() {
		b := make([]byte, 64)
		for {
			n, err := l.in.Read(b)
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
	synced := make(chan struct{})
	go func() {
		if l.w.WaitSynced(ctx) == nil {
			l.m.SetSynced()
		}
		close(synced)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()

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
		case <-winch:
			l.clear()
			draw()
		case <-tick.C:
			draw()
		}
	}
}

// draw renders the model and writes the lines that changed since the last
// frame (most do not: a tick changes the clock and the ages), each in place,
// in one write.
func (l *loop) draw() {
	start := time.Now()
	width, height, err := term.GetSize(int(l.out.Fd()))
	if err != nil {
		width, height = 80, 24
	}
	f := l.m.Frame(start)
	if err := l.w.RecentErr(30 * time.Second); err != nil {
		f.Warning = "watch: " + err.Error()
	}
	lines := Render(f, Options{Width: width, Height: height, Live: true})
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

// clear wipes the screen and forgets what is on it, so the next draw writes every line.
func (l *loop) clear() {
	_, _ = l.out.WriteString("\x1b[2J")
	l.prev = nil
}
