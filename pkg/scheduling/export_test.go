package scheduling

// SolveOneByOne is Solve with every pod placed on its own (no runs of identical pods placed as
// a class): the reference that placeRun must reproduce exactly.
func SolveOneByOne(in *Input) *Results {
	s := newSolver(in)
	s.oneByOne = true
	s.run()
	r := s.results()
	s.releaseScratch()
	return r
}
