package provisioning

import "github.com/karpenter-go/karpenter/pkg/controllers/provisioning/defaultspread"

// DefaultSpread returns what gives pods kube-scheduler's default topology
// spread constraints (Options.DefaultTopologySpread) for one decision; nil,
// which changes nothing, when there are none. SolverInput applies it to the
// pods to place; the disruption controller to the pods it may move.
func (p *Provisioner) DefaultSpread() *defaultspread.Applier {
	return defaultspread.New(p.kube, p.opts.DefaultTopologySpread)
}
