package top

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Options say how much room a frame has.
type Options struct {
	// Width in columns; lines never exceed it. <= 0 means no limit.
	Width int
	// Height in lines; <= 0 means no limit (--once prints every node).
	Height int
	// Live adds the "q quits" hint to the title.
	Live bool
	// sticky, when set, holds the widest columns of earlier frames: columns
	// then never narrow between frames of the live view (no jumping back and
	// forth as values change), and Render widens it.
	sticky *layout
}

// Render lays a frame out as lines of at most o.Width runes (no trailing
// newline, no escape sequences): a title, a column header, each pool's
// total line followed by its nodes, and the cluster total last. When the
// nodes do not fit in o.Height, each pool keeps a fair share of the lines and
// says how many it left out.
func Render(f *Frame, o Options) []string {
	width := o.Width
	if width <= 0 {
		width = 1 << 20 // no limit
	}
	l := newLayout(f)
	if o.sticky != nil {
		l.atLeast(o.sticky)
		*o.sticky = *l
	}
	l.fit(max(width, 20))

	var out []string
	out = append(out, title(f, o.Live))
	out = append(out, l.header())

	total := f.Totals()
	body := layoutBody(f, o.Height)
	for _, b := range body {
		switch {
		case b.pool != nil:
			t := b.pool.Totals()
			out = append(out, l.row(poolLabel(b.pool, t), true, summaryCells(&t)))
		case b.node != nil:
			out = append(out, l.row("  "+b.node.Name, false, nodeCells(b.node, f.Now)))
		default:
			out = append(out, b.text)
		}
	}
	out = append(out, l.row(fmt.Sprintf("TOTAL · %s", plural(total.Nodes, "node")), true, summaryCells(&total)))

	for i, s := range out {
		out[i] = clip(strings.TrimRight(s, " "), width)
	}
	if o.Height > 0 && len(out) > o.Height {
		out = out[:o.Height]
	}
	return out
}

func title(f *Frame, live bool) string {
	parts := []string{"karpenter top"}
	if f.Cluster != "" {
		parts = append(parts, f.Cluster)
	}
	pools := 0
	for i := range f.Pools {
		if !f.Pools[i].Unmanaged {
			pools++
		}
	}
	parts = append(parts, fmt.Sprintf("%s in %s", plural(f.Totals().Nodes, "node"), plural(pools, "nodepool")))
	parts = append(parts, plural(f.PendingPods, "pending pod"))
	if f.Syncing {
		parts = append(parts, "syncing…")
	}
	if !f.Now.IsZero() {
		parts = append(parts, f.Now.UTC().Format("15:04:05 UTC"))
	}
	if live {
		parts = append(parts, "q quits")
	}
	if f.Warning != "" {
		parts = append(parts, "! "+f.Warning)
	}
	return strings.Join(parts, " · ")
}

func poolLabel(p *Pool, t Totals) string {
	var b strings.Builder
	b.WriteString("▾ ")
	if p.Unmanaged {
		b.WriteString("(no nodepool)")
	} else {
		b.WriteString(p.Name)
	}
	if p.Gone {
		b.WriteString(" (nodepool gone)")
	}
	b.WriteString(" · " + plural(t.Nodes, "node"))
	var lim []string
	if p.CPULimit > 0 {
		lim = append(lim, "cpu "+fmtCPU(p.CPULimit))
	}
	if p.MemLimit > 0 {
		lim = append(lim, "mem "+fmtMem(p.MemLimit))
	}
	if len(lim) > 0 {
		b.WriteString(" · limit " + strings.Join(lim, " "))
	}
	return b.String()
}

func plural(n int, what string) string { return strconv.Itoa(n) + " " + pluralWord(n, what) }

func pluralWord(n int, what string) string {
	if n == 1 {
		return what
	}
	return what + "s"
}

// cells are a row's values by column; the label column is passed apart.
type cells struct {
	state, typ, capType, zone, age     string
	cpuReq, cpuAlloc, memReq, memAlloc int64
	cpuAmt, memAmt                     string
	pods, price                        string
}

func nodeCells(n *Node, now time.Time) cells {
	c := cells{
		state: n.State, typ: dash(n.InstanceType), capType: dash(n.CapacityType), zone: dash(n.Zone), age: "-",
		cpuReq: n.CPUReq, cpuAlloc: n.CPUAlloc, memReq: n.MemReq, memAlloc: n.MemAlloc,
		cpuAmt: fmtCPU(n.CPUReq) + "/" + fmtCPU(n.CPUAlloc),
		memAmt: fmtMem(n.MemReq) + "/" + fmtMem(n.MemAlloc),
		pods:   strconv.Itoa(n.Pods), price: "?",
	}
	if !n.Created.IsZero() && !now.IsZero() {
		c.age = duration.HumanDuration(now.Sub(n.Created))
	}
	if n.PriceKnown {
		c.price = fmtPrice(n.Price)
	}
	return c
}

func summaryCells(t *Totals) cells {
	c := cells{
		cpuReq: t.CPUReq, cpuAlloc: t.CPUAlloc, memReq: t.MemReq, memAlloc: t.MemAlloc,
		cpuAmt: fmtCPU(t.CPUReq) + "/" + fmtCPU(t.CPUAlloc),
		memAmt: fmtMem(t.MemReq) + "/" + fmtMem(t.MemAlloc),
		pods:   strconv.Itoa(t.Pods), price: fmtPrice(t.Price),
	}
	if t.Unpriced > 0 {
		// A lower bound: some nodes have no known price.
		c.price = "≥" + c.price
	}
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// fmtCPU prints millicores as cores: 4, 3.5, 0.25, 12.
func fmtCPU(m int64) string {
	if m%1000 == 0 {
		return strconv.FormatInt(m/1000, 10)
	}
	prec := 1
	if m < 1000 {
		prec = 2
	}
	s := strconv.FormatFloat(float64(m)/1000, 'f', prec, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// fmtMem prints bytes in binary units, at most one decimal: 512Mi, 3.5Gi, 16Gi, 1.2Ti.
func fmtMem(b int64) string {
	const ki, mi, gi, ti = 1 << 10, 1 << 20, 1 << 30, 1 << 40
	unit, div := "", int64(1)
	switch {
	case b >= ti:
		unit, div = "Ti", ti
	case b >= gi:
		unit, div = "Gi", gi
	case b >= mi:
		unit, div = "Mi", mi
	case b >= ki:
		unit, div = "Ki", ki
	}
	if b%div == 0 || float64(b)/float64(div) >= 100 {
		return strconv.FormatInt((b+div/2)/div, 10) + unit
	}
	s := strconv.FormatFloat(float64(b)/float64(div), 'f', 1, 64)
	return strings.TrimSuffix(s, ".0") + unit
}

func fmtPrice(p float64) string { return strconv.FormatFloat(p, 'f', 3, 64) }

func pct(req, alloc int64) string {
	if alloc <= 0 {
		return "   -"
	}
	return fmt.Sprintf("%3d%%", (req*100+alloc/2)/alloc)
}

var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// bar draws req/alloc in w cells with eighth-cell precision; past 100% it is full.
func bar(req, alloc int64, w int) string {
	n := 0
	if alloc > 0 {
		n = int((req*int64(w)*8 + alloc/2) / alloc)
	}
	n = max(0, min(n, w*8))
	full, rem := n/8, n%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	used := full
	if rem > 0 {
		b.WriteString(eighths[rem])
		used++
	}
	b.WriteString(strings.Repeat("░", w-used))
	return b.String()
}

// clip cuts s to w runes, ending in "…" when it had to cut.
func clip(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	if w <= 1 {
		return string([]rune(s)[:w])
	}
	return string([]rune(s)[:w-1]) + "…"
}

// pad left-aligns s in w runes (clipping it when longer).
func pad(s string, w int) string {
	s = clip(s, w)
	return s + strings.Repeat(" ", w-utf8.RuneCountInString(s))
}

// rpad right-aligns s in w runes.
func rpad(s string, w int) string {
	s = clip(s, w)
	return strings.Repeat(" ", w-utf8.RuneCountInString(s)) + s
}
