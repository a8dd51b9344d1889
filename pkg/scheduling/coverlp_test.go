package scheduling

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// TestCoverLPMatchesGonumSimplex solves random covering programs with the dual simplex of
// coverlp.go and with gonum's primal simplex: the optima agree, x is feasible, and the duals
// certify the optimum (b·y equals it and no column is worth more than its price at y).
func TestCoverLPMatchesGonumSimplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 200; trial++ {
		m, n := 1+rng.IntN(5), 1+rng.IntN(40)
		p := &coverLP{b: make([]float64, m), c: make([]float64, n), cols: make([][]float64, n)}
		for i := range p.b {
			p.b[i] = 0.5 + rng.Float64()*3
		}
		for j := range p.cols {
			p.cols[j] = make([]float64, m)
			for i := range m {
				if rng.IntN(4) > 0 {
					p.cols[j][i] = rng.Float64() * 2
				}
			}
			p.cols[j][rng.IntN(m)] += 0.1 // gonum refuses a column of zeros
			p.c[j] = rng.Float64() * 5
		}
		x, y, opt, ok := p.solve()
		// gonum, in standard form with surplus columns.
		a := mat.NewDense(m, n+m, nil)
		c := make([]float64, n+m)
		for j := range n {
			for i := range m {
				a.Set(i, j, p.cols[j][i])
			}
			c[j] = p.c[j]
		}
		for i := range m {
			a.Set(i, n+i, -1)
		}
		gopt, _, err := lp.Simplex(c, a, p.b, 1e-10, nil)
		if err != nil {
			if ok {
				t.Fatalf("trial %d: gonum says %v, coverLP found optimum %v", trial, err, opt)
			}
			continue
		}
		if !ok {
			t.Fatalf("trial %d: coverLP failed, gonum optimum %v", trial, gopt)
		}
		if math.Abs(opt-gopt) > 1e-6*math.Max(1, gopt) {
			t.Fatalf("trial %d: optimum %v, gonum %v", trial, opt, gopt)
		}
		for i := range m {
			s := 0.0
			for j := range n {
				s += p.cols[j][i] * x[j]
			}
			if s < p.b[i]-1e-7 {
				t.Fatalf("trial %d: row %d covered %v < %v", trial, i, s, p.b[i])
			}
		}
		dual := 0.0
		for i := range m {
			dual += p.b[i] * y[i]
		}
		if math.Abs(dual-opt) > 1e-6*math.Max(1, opt) {
			t.Fatalf("trial %d: b·y = %v, optimum %v", trial, dual, opt)
		}
		for j := range n {
			v := 0.0
			for i := range m {
				v += p.cols[j][i] * y[i]
			}
			if v > p.c[j]+1e-7 {
				t.Fatalf("trial %d: column %d worth %v at the duals, price %v", trial, j, v, p.c[j])
			}
		}
	}
}
