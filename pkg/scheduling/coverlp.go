package scheduling

import "math"

// coverLP is a covering linear program with few rows and many columns:
//
//	minimise Σ_j c_j·x_j  subject to  Σ_j a_j[i]·x_j ≥ b_i (every row i),  x ≥ 0,
//
// where column j is an instance type (c_j its price, a_j its allocatable per resource) and row i
// a resource the pods request in total b_i. Prices are non-negative, so the all-surplus basis is
// dual feasible and the dual simplex method starts from it without a first phase; with a handful
// of rows every iteration is one pass over the columns. Besides the optimum it gives the duals:
// y_i is what one more unit of resource i would cost at the optimum, which is how repack values
// a pod (the cost of its requests at those rates) and ranks instance types (no type is worth
// more than its price at those rates, the best are worth exactly their price).
type coverLP struct {
	cols [][]float64 // cols[j][i] = a_j[i]
	c    []float64
	b    []float64
}

// solve returns the optimal x (by column), the duals y (by row) and the optimum. ok is false
// when some row cannot be covered or the iterations run out.
func (p *coverLP) solve() (x, y []float64, opt float64, ok bool) {
	m, n := len(p.b), len(p.cols)
	const eps = 1e-9
	// The basis: one variable per row, a column j < n or the surplus of row j-n. Its inverse is
	// kept explicitly (m×m, m small).
	basis := make([]int, m)
	inBasis := make([]bool, n+m)
	binv := make([][]float64, m)
	for i := range binv {
		binv[i] = make([]float64, m)
		binv[i][i] = -1 // the surplus columns are -e_i
		basis[i] = n + i
		inBasis[n+i] = true
	}
	col := func(j int, out []float64) {
		if j < n {
			copy(out, p.cols[j])
			return
		}
		clear(out)
		out[j-n] = -1
	}
	cost := func(j int) float64 {
		if j < n {
			return p.c[j]
		}
		return 0
	}
	y = make([]float64, m)
	// duals sets y to the current basis's duals, c_B·B⁻¹, for the reduced costs d_j = c_j − y·a_j.
	duals := func() {
		for i := range y {
			v := 0.0
			for k := range m {
				v += cost(basis[k]) * binv[k][i]
			}
			y[i] = v
		}
	}
	xb := make([]float64, m)
	u := make([]float64, m)
	aq := make([]float64, m)
	// Each iteration pivots once; a covering program of this shape needs far fewer.
	maxIter := 20*(n+m) + 100
	optimal := false
	for iter := 0; iter < maxIter; iter++ {
		for i := range xb {
			v := 0.0
			for k := range m {
				v += binv[i][k] * p.b[k]
			}
			xb[i] = v
		}
		r := -1
		for i, v := range xb {
			if v < -eps && (r < 0 || v < xb[r]) {
				r = i
			}
		}
		if r < 0 {
			optimal = true // primal feasible: the basis is optimal
			break
		}
		duals()
		row := binv[r]
		q, best := -1, math.Inf(1)
		for j := 0; j < n+m; j++ {
			if inBasis[j] {
				continue
			}
			var alpha, d float64
			if j < n {
				a := p.cols[j]
				for i := range m {
					alpha += row[i] * a[i]
					d -= y[i] * a[i]
				}
				d += p.c[j]
			} else {
				alpha, d = -row[j-n], y[j-n]
			}
			if alpha >= -eps {
				continue
			}
			if ratio := max(d, 0) / -alpha; ratio < best {
				q, best = j, ratio
			}
		}
		if q < 0 {
			return nil, nil, 0, false // row r cannot be covered
		}
		col(q, aq)
		for i := range u {
			v := 0.0
			for k := range m {
				v += binv[i][k] * aq[k]
			}
			u[i] = v
		}
		piv := u[r]
		for k := range m {
			binv[r][k] /= piv
		}
		for i := range m {
			if i == r || u[i] == 0 {
				continue
			}
			f := u[i]
			for k := range m {
				binv[i][k] -= f * binv[r][k]
			}
		}
		inBasis[basis[r]], inBasis[q] = false, true
		basis[r] = q
	}
	if !optimal {
		return nil, nil, 0, false // the iterations ran out
	}
	x = make([]float64, n)
	for i, j := range basis {
		v := 0.0
		for k := range m {
			v += binv[i][k] * p.b[k]
		}
		if j < n && v > 0 {
			x[j] = v
			opt += p.c[j] * v
		}
	}
	duals()
	for i := range y {
		y[i] = max(y[i], 0)
	}
	return x, y, opt, true
}
