// Package disruption is the pure core of voluntary disruption: given a snapshot
// of the cluster (nodes and their NodeClaims, bound and pending pods, NodePools
// with budgets and instance types, PodDisruptionBudgets, "now"), it decides at
// most one disruption command per pass and says, for every node a method wanted
// but left alone, why. It makes no API calls and reads no clock; the same Input
// gives the same Result. The controller in pkg/controllers/disrupter gathers
// the snapshot, calls Run, validates and hands the decision to the
// orchestration queue; tests and benchmarks call Run directly.
//
// Methods (Method, one file each) run in upstream Karpenter's order, ours last, as listed
// in Methods, and the first with a decision wins:
//
//  0. Repair (reason Unhealthy, NodeRepair gate only, see MethodRepair): nodes
//     whose Node has a condition matching a repair policy of the cloud
//     provider past its toleration, by policy priority and age; one per
//     command, replaced first when its pods need room; karpenter.sh/do-not-repair
//     vetoes it, and it stops in a NodePool with more than 20% unhealthy nodes.
//  1. Emptiness (reason Empty): Consolidatable nodes without reschedulable pods
//     (DaemonSet, mirror, finished and terminating pods do not count), all that
//     the budgets allow, deleted in one command, whatever the consolidation
//     policy.
//  2. Drift (reason Drifted): nodes with the Drifted condition, empty ones
//     first, then those drifted longest; one per command, replaced by as many
//     new nodes as its pods need.
//  3. Multi-node consolidation (reason Underutilized, policy
//     WhenEmptyOrUnderutilized): the longest prefix of the candidates, ordered
//     by disruption cost per dollar, whose pods fit on the remaining nodes plus
//     at most one new node cheaper than all of them and not of one of their
//     instance types. There is no fixed cap on the prefix (upstream stops at
//     100): a packer answers each probe of the binary search in milliseconds and
//     only the answer is confirmed by the solver. The whole prefix the budgets
//     allow is probed first; in a large cluster it is usually the answer.
//  4. Single-node consolidation: each candidate alone, NodePools interleaved:
//     deleted when its pods fit elsewhere, replaced by one cheaper node, or
//     explained ("no cheaper replacement: cheapest compatible costs 0.19/h vs
//     0.17/h").
//  5. Repack consolidation (ours, after upstream's methods; off with
//     Options.DisableRepackConsolidation): sets of the candidates within each
//     NodePool's budget, those leaving the most money idle first (and every
//     pair where the candidates are few), re-solved with the provisioner's
//     repacking solver onto the other nodes and as many new nodes as suit
//     the pods together; taken when every instance type the replacements may
//     launch keeps it RepackMinSaving (5%) cheaper and the pods still all find
//     room if kube-scheduler sends each to the emptiest node (scatter.go). It
//     finishes what one-replacement moves cannot: a fleet grown by churn whose
//     fresh placement would cost much less.
//
// Adding a method is one file and one line. The file defines the method's
// value; the line puts it in Methods, where its position is its priority. The
// value says everything the pass, Validate, the controller, the orchestration
// queue and the metrics need: name, reason (whose budget it consumes),
// consolidation_type label, whether its decisions are validated after
// ValidationDelay, whether it simulates (and so can time out), whether its
// delete decisions may be narrowed on validation, whether blocking pods hold it
// back, its candidate filter, its decision and what Validate re-checks. For
// example, a method deleting, one per command, the nodes whose NodeClaim has a
// (hypothetical) Idle condition, in idle.go:
//
//	var MethodIdle Method = idle{}
//
//	type idle struct{}
//
//	func (idle) String() string                { return "idle" }
//	func (idle) Reason() v1.DisruptionReason   { return "Idle" }
//	func (idle) ConsolidationType() string     { return "" }
//	func (idle) Validated() bool               { return true }
//	func (idle) Simulates() bool               { return false }
//	func (idle) Narrows() bool                 { return false }
//	func (idle) graceful() bool                { return true }
//	func (idle) revalidate(*pass, []*node, *Decision) (bool, string) { return true, "" }
//
//	func (idle) wants(n *node) (bool, *block) {
//		return n.NodeClaim.StatusConditions().Get("Idle").IsTrue(), nil
//	}
//
//	func (m idle) decide(p *pass) *Decision {
//		for _, n := range p.candidates(m) { // filtered, rules applied, others explained
//			if b := p.budget(n, m.Reason()); b.Allowed == 0 {
//				p.explain(n, m, CodeBudget, b.Message)
//				continue
//			}
//			return &Decision{Method: m, Candidates: []*Node{n.Node}, Explanation: "node " + n.Name + " is idle"}
//		}
//		return nil
//	}
//
// and in method.go, Methods gains the line "MethodIdle,". Its reason gets a
// budget (Reasons follows Methods); a reason new to the API must also be added
// to the NodePool's budget reasons in pkg/apis. Nothing else names a method:
// the controller times, validates and counts it through the interface, and the
// orchestration queue carries it in Command.Method.
//
// Spot: an on-demand node may be replaced by spot or on-demand capacity; when
// both are allowed the replacement is forced to spot (the price comparison
// assumed spot). Spot to spot needs the SpotToSpotConsolidation feature gate
// and, for a single node, at least 15 cheaper instance types, of which the
// replacement keeps the cheapest 15 (or what minValues needs).
//
// Never disrupted: nodes not initialized, being deleted, held by a command or
// nominated for pending pods; nodes (or NodeClaims) annotated
// karpenter.sh/do-not-disrupt=true; nodes with a pod annotated
// karpenter.sh/do-not-disrupt "true" (or a positive duration not yet elapsed
// since the pod started, or a duration on a pod not started; other values are
// ignored with a warning event, as upstream); nodes with a pod a PodDisruptionBudget would not let go. Drift
// of a NodeClaim with a terminationGracePeriod ignores blocking pods, as
// upstream does: the grace period bounds how long they can hold the node.
//
// Budgets, per NodePool and reason: the minimum over the active budgets that
// name the reason (or none), a percentage of the pool's initialized nodes
// rounded up, minus the pool's nodes already disrupting or NotReady. A budget
// with a schedule is active for its duration after each hit of its 5-field
// cron expression, in UTC (ParseSchedule). An unparseable schedule allows
// nothing.
//
// Simulation (simulate.go) uses pkg/scheduling's Solve, narrowed to the nodes
// that matter; simulate.go says why that gives the whole-cluster answer,
// pack.go holds the packer, the fast bin packing of the candidates' pods onto
// the remaining nodes that picks those nodes (and answers multi-node
// consolidation's probes alone), and partition.go says why pods that can never
// meet (pods of different NodePools, typically) are solved apart. Its work per
// pass is bounded (Options.MaxSimulationWork), in units of solver input rather
// than wall time so that passes stay deterministic.
package disruption
