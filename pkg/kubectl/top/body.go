package top

import "fmt"

// line is one body line: a pool's total, a node, or a note ("… 3 more").
type line struct {
	pool *Pool
	node *Node
	text string
}

// layoutBody chooses the body lines. Without a height limit every node is
// shown. With one, the title, the header and the total take three lines and
// the rest is shared: each pool keeps its own line, then the pools take one
// node each in turn, so a small pool is shown whole and a big one is cut,
// with "… N more" in place of what is left out. If not even the pool lines
// fit, the last line counts the pools left out.
func layoutBody(f *Frame, height int) []line {
	if height <= 0 {
		var out []line
		for i := range f.Pools {
			p := &f.Pools[i]
			out = append(out, line{pool: p})
			for j := range p.Nodes {
				out = append(out, line{node: &p.Nodes[j]})
			}
		}
		return out
	}
	budget := max(0, height-3)
	// need is the lines a pool takes with k nodes shown.
	need := func(p *Pool, k int) int {
		n := 1 + k
		if k < len(p.Nodes) {
			n++
		}
		return n
	}
	pools := len(f.Pools)
	used := 0
	for i := range f.Pools {
		used += need(&f.Pools[i], 0)
	}
	if used > budget {
		// Not even one line per pool: show the pools that fit and count the rest.
		used, pools = 0, 0
		for i := range f.Pools {
			n := need(&f.Pools[i], 0)
			if used+n+1 > budget {
				break
			}
			used += n
			pools++
		}
		budget-- // the line that counts the pools left out
	}
	shown := make([]int, pools)
	for progress := true; progress; {
		progress = false
		for i := 0; i < pools; i++ {
			p := &f.Pools[i]
			if shown[i] == len(p.Nodes) {
				continue
			}
			cost := need(p, shown[i]+1) - need(p, shown[i])
			if used+cost > budget {
				continue
			}
			used += cost
			shown[i]++
			progress = true
		}
	}
	var out []line
	for i := 0; i < pools; i++ {
		p := &f.Pools[i]
		out = append(out, line{pool: p})
		for j := 0; j < shown[i]; j++ {
			out = append(out, line{node: &p.Nodes[j]})
		}
		if rest := len(p.Nodes) - shown[i]; rest > 0 {
			out = append(out, line{text: fmt.Sprintf("  … %d more", rest)})
		}
	}
	if pools < len(f.Pools) && budget > 0 {
		nodes := 0
		for _, p := range f.Pools[pools:] {
			nodes += len(p.Nodes)
		}
		out = append(out, line{text: fmt.Sprintf("… %d more %s (%s)", len(f.Pools)-pools, pluralWord(len(f.Pools)-pools, "nodepool"), plural(nodes, "node"))})
	}
	return out
}
