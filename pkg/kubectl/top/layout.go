package top

import (
	"strings"
	"unicode/utf8"
)

// layout holds the width of each column; 0 hides a column.
type layout struct {
	name                           int
	state, typ, capType, zone, age int
	bar                            int // bar cells in the CPU and MEM columns
	cpuAmt, memAmt                 int // the "req/alloc" after the bar
	pods, price                    int
}

const (
	gap     = "  "
	maxBar  = 20
	maxName = 48
	maxType = 24
)

func runes(s string) int { return utf8.RuneCountInString(s) }

// newLayout measures every row so that each column is as wide as its widest value.
func newLayout(f *Frame) *layout {
	l := &layout{
		name: runes("NODE"), state: runes("STATE"), typ: runes("TYPE"), capType: runes("CAPACITY"),
		zone: runes("ZONE"), age: runes("AGE"), bar: maxBar, pods: runes("PODS"), price: runes("$/H"),
	}
	measure := func(c cells) {
		l.cpuAmt = max(l.cpuAmt, runes(c.cpuAmt))
		l.memAmt = max(l.memAmt, runes(c.memAmt))
		l.pods = max(l.pods, runes(c.pods))
		l.price = max(l.price, runes(c.price))
	}
	for i := range f.Pools {
		p := &f.Pools[i]
		t := p.Totals()
		measure(summaryCells(&t))
		for j := range p.Nodes {
			n := &p.Nodes[j]
			c := nodeCells(n, f.Now)
			measure(c)
			l.name = max(l.name, min(maxName, 2+runes(n.Name)))
			l.state = max(l.state, runes(c.state))
			l.typ = max(l.typ, min(maxType, runes(c.typ)))
			l.capType = max(l.capType, runes(c.capType))
			l.zone = max(l.zone, runes(c.zone))
			l.age = max(l.age, runes(c.age))
		}
	}
	t := f.Totals()
	measure(summaryCells(&t))
	return l
}

// atLeast widens l's columns to o's.
func (l *layout) atLeast(o *layout) {
	for _, p := range []struct{ dst, src *int }{
		{&l.name, &o.name}, {&l.state, &o.state}, {&l.typ, &o.typ}, {&l.capType, &o.capType}, {&l.zone, &o.zone},
		{&l.age, &o.age}, {&l.cpuAmt, &o.cpuAmt}, {&l.memAmt, &o.memAmt}, {&l.pods, &o.pods}, {&l.price, &o.price},
	} {
		*p.dst = max(*p.dst, *p.src)
	}
}

func (l *layout) usageWidth(amt int) int {
	w := 4 // "100%"
	if l.bar > 0 {
		w += l.bar + 1
	}
	if amt > 0 {
		w += 1 + amt
	}
	return w
}

// widths of the columns right of the name, in order, 0 for hidden ones.
func (l *layout) widths() []int {
	return []int{l.state, l.typ, l.capType, l.zone, l.age, l.usageWidth(l.cpuAmt), l.usageWidth(l.memAmt), l.pods, l.price}
}

func (l *layout) width() int {
	w := l.name
	for _, c := range l.widths() {
		if c > 0 {
			w += len(gap) + c
		}
	}
	return w
}

// fit narrows the layout until it fits in width: first shorter bars, then it
// drops the columns a glance needs least, keeping name, CPU, MEM and $/h to
// the end. Render clips whatever still does not fit.
func (l *layout) fit(width int) {
	steps := []func(){
		func() { l.bar = 10 },
		func() { l.zone = 0 },
		func() { l.pods = 0 },
		func() { l.state = 0 },
		func() { l.bar = 5 },
		func() { l.cpuAmt, l.memAmt = 0, 0 },
		func() { l.name = min(l.name, 16) },
		func() { l.age = 0 },
		func() { l.capType = 0 },
		func() { l.typ = 0 },
		func() { l.name = min(l.name, 10) },
		func() { l.bar = 0 },
	}
	for _, step := range steps {
		if l.width() <= width {
			return
		}
		step()
	}
}

func (l *layout) header() string {
	var b strings.Builder
	b.WriteString(pad("NODE", l.name))
	for _, c := range []struct {
		w int
		s string
	}{{l.state, "STATE"}, {l.typ, "TYPE"}, {l.capType, "CAPACITY"}, {l.zone, "ZONE"}, {l.age, "AGE"},
		{l.usageWidth(l.cpuAmt), "CPU"}, {l.usageWidth(l.memAmt), "MEM"}, {l.pods, "PODS"}} {
		if c.w > 0 {
			b.WriteString(gap + pad(c.s, c.w))
		}
	}
	if l.price > 0 {
		b.WriteString(gap + rpad("$/H", l.price))
	}
	return b.String()
}

// row lays out one line. A span row (pool, total) writes its label across the
// name, state, type, capacity, zone and age columns.
func (l *layout) row(label string, span bool, c cells) string {
	var b strings.Builder
	left := []struct {
		w int
		s string
	}{{l.state, c.state}, {l.typ, c.typ}, {l.capType, c.capType}, {l.zone, c.zone}, {l.age, c.age}}
	if span {
		w := l.name
		for _, col := range left {
			if col.w > 0 {
				w += len(gap) + col.w
			}
		}
		b.WriteString(pad(label, w))
	} else {
		b.WriteString(pad(label, l.name))
		for _, col := range left {
			if col.w > 0 {
				b.WriteString(gap + pad(col.s, col.w))
			}
		}
	}
	b.WriteString(gap + l.usage(c.cpuReq, c.cpuAlloc, c.cpuAmt, l.cpuAmt))
	b.WriteString(gap + l.usage(c.memReq, c.memAlloc, c.memAmt, l.memAmt))
	if l.pods > 0 {
		b.WriteString(gap + rpad(c.pods, l.pods))
	}
	if l.price > 0 {
		b.WriteString(gap + rpad(c.price, l.price))
	}
	return b.String()
}

func (l *layout) usage(req, alloc int64, amt string, amtW int) string {
	var b strings.Builder
	if l.bar > 0 {
		b.WriteString(bar(req, alloc, l.bar) + " ")
	}
	b.WriteString(pct(req, alloc))
	if amtW > 0 {
		b.WriteString(" " + rpad(amt, amtW))
	}
	return b.String()
}
