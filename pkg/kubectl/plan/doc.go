// Package plan is `kubectl karpenter plan`: what Karpenter would do next on a
// snapshot of a cluster, computed by the controller's own code. Provisioning
// is the provisioner's pending pods and solver input handed to
// scheduling.Solve; disruption is the disruption controller's input
// (disrupter.BuildInput, budgets and PDBs included) handed to disruption.Run,
// repeated while passes decide, each decision applied in memory as the
// orchestration queue would (candidates marked for deletion, replacements
// in flight), so that a budget used up by earlier steps shows as the block it
// is. Nothing is written anywhere: the snapshot's client refuses writes.
//
// The Plan struct is the stable output of -o json|yaml (see its fields).
package plan
