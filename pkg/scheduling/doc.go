// Package scheduling is the pure core of provisioning and consolidation: given a snapshot of
// pods, NodePools (with their instance types), existing and in-flight nodes, DaemonSets and
// volumes, Solve decides which pods go to existing nodes and which new NodeClaims to create,
// each with the price-ordered list of instance types still able to hold its pods.
//
// Solve makes no API calls, reads no clock and, without an Input.Cache, keeps no state between
// solves (it reuses zeroed scratch memory from a pool, scratch.go, nothing it computed); the
// same Input gives the same Results. With a Cache (cache.go), what a NodePool's instance types
// give independently of the pods (per-type vectors; per requirement set the compatible types,
// their price order, the pool's domains and a claim's chosen types) is kept across solves,
// keyed by the types' identities and every offering's availability and price. Controllers
// gather the snapshot, call Solve and act on the result:
//
//   - provisioning adapts karpenter.sh/v1 NodePools into NodePool (Remaining = limits minus
//     usage) and launches Results.NewClaims;
//   - consolidation calls Solve with the candidate nodes left out of ExistingNodes and their
//     reschedulable pods added to Pods, then compares the NewClaims' Price with the candidates'.
//
// Prepared existing nodes. A disruption pass asks many such questions of one snapshot, each
// showing a different subset of the nodes. It reads the nodes once (PrepareExisting: their
// bound pods' requests, host ports and labels, their taints in force) and sets Input.Prepared on
// every solve; each solve still lists in ExistingNodes the nodes it may use (any subset of the
// set, in any order, plus nodes outside it, which it reads itself) and gets the result a solve
// without the set would give. The set also keeps, across solves, the bound pods' label index
// and each node's shape (labels but hostname, and taints), against which pods are checked once
// per shape rather than once per node:
//
//	set := scheduling.PrepareExisting(snapshot.Nodes)
//	for _, q := range questions {
//		in := base // Pods, NodePools, DaemonSetPods, ... as usual
//		in.Prepared, in.ExistingNodes = set, q.Shown
//		res := scheduling.Solve(&in)
//		...
//	}
//
// The nodes and their pods must not change while the set is in use; a set is for one goroutine.
//
// Model. Requirements is an immutable, key-sorted conjunction of label requirements (In,
// NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte, minValues). Compatible/Intersects report the
// conflicting key with both sides, and those messages reach users through Results.PodErrors.
//
// DaemonSets. A new node's DaemonSet pods depend on its instance type: those that tolerate the
// NodePool's taints and whose node selector and required node affinity admit the pool's labels
// and the type's. Each type's allocatable is net of its own daemons' requests, a pod binding a
// host port that a type's daemons bind cannot take that type (the claim keeps the others), and
// a claim requests, per resource, the least daemon overhead of its types. Types are grouped by
// their daemons once per pool and solve (prepare in claims.go), as upstream groups daemon
// overhead per NodeClaim template.
//
// Algorithm. Pods are sorted by cpu, then memory (descending), then age. Each pod tries, in
// order, existing initialized nodes, in-flight nodes, claims opened earlier in this solve and
// finally a new claim from each NodePool by weight. When nothing fits, one preference is
// relaxed in upstream Karpenter's order (see relax) and the pod is tried again; pods that fail
// are retried while passes make progress. The hot path is kept cheap by:
//   - interning requirement sets into small integer IDs, so that the merge of a claim's and a
//     pod's requirements and the set of instance types compatible with a requirement set
//     (a bitset) are each computed once per distinct pair/set and then looked up;
//   - keeping each claim's candidate instance types as a bitset plus the componentwise maximum
//     of their allocatable resources, which rejects most claims without touching a type;
//   - maintaining topology counts incrementally per group of identical constraints (hostname
//     groups in arrays indexed by target), instead of recounting per pod;
//   - narrowing a claim's types by resources through a per-pool sorted table (narrow.go), and
//     finding the groups that count a pod through an index by selector pair (groupindex.go);
//   - reading every pod once, in input order, with no allocation per pod (slabs for podInfos;
//     builtin requests kept in the podInfo), and compiling only what a pod has: most pods have
//     no constraint, and those share one read-only podCons (copied before a relaxation) and
//     compile into the solver's scratch attempt instead of one each (pods.go, compile.go);
//   - sorting the queue with a quicksort specialised to flat integer keys (the UID compared as
//     8 bytes past the prefix all UIDs share), not a generic sort calling a closure (pods.go);
//   - taking every array and slab that dies with the solve from a pool of scratch memory and
//     giving it back zeroed, only what was handed out cleared (scratch.go; clearing memory
//     that holds pointers costs a write barrier per word while the collector marks): a young
//     process otherwise faults in fresh heap pages
//     for it, and an old one collects it; equal outputs (claims' Requests and Requirements) are
//     shared, read-only;
//   - cutting per-pod lists (the groups that count a pod, its own groups, its topology keys)
//     from the scratch at their exact length, and the claims of the result from one array:
//     a 1,000-pod solve makes ~970 allocations, not one per list;
//   - keeping what dies with the solve in that scratch too (price-ordered lists, the pool's
//     name order, topology groups and their hostname counts, the target list), and sharing
//     read-only outputs: claims narrowed to a stretch of a price order cut their InstanceTypes
//     from one list of that order's types. In a young process every fresh heap page is a page
//     fault (~13 us each on the benchmark's VM), so result bytes are time: a 1,000-pod solve
//     allocates ~235 KB, nearly all of it the Results themselves;
//   - working out, once per solve and pool, what many requirement sets share: which types
//     their labels admit depends only on the requirements on keys the types define
//     (labelCompatible: a claim pinned to each zone shares one), and compatible finds each
//     type's cheapest compatible offering in the same pass over the offerings that ordered
//     then sorts; names are sorted by the 8 bytes past their common prefix as one integer;
//   - reading a selector of matchLabels only (nearly all) as key=value pairs, validated as
//     metav1.LabelSelectorAsSelector would, the labels.Selector built only when a message or
//     an existing node's bound pods ask for it (topoGroup.sel);
//   - placing runs of identical constraint-free pods (consecutive in queue order: same
//     requests, no group counting them, one attempt) as a class: the claim the first one joined
//     takes as many as fit in one narrowing of its types (bisection on the count), and the next
//     pod scans on after that claim, since the targets before it rejected the identical pod
//     before (placeRun in solver.go; TestRunsMatchOneByOne pins it to one-by-one placement).
//
// Repacking (Options.Repack, repack.go; set by provisioning and kubectl karpenter plan through
// the provisioner's LaunchInput, and by repack consolidation's simulations). The
// placement loop grows each claim to the largest type its pods need, so a fleet's families and
// sizes follow arrival order. After placement, the claims of one NodePool and requirement set
// whose pods nothing but their requirements places (no hostname-keyed group owns or counts
// them, no host port) are packed again: the covering LP over the class's types (coverlp.go, a
// dual simplex) prices each resource; nodes are opened one at a time, of the type whose
// balanced fill is worth most per $ at those prices (the largest within 1% of the best), claims
// keeping pods that cannot move are refilled first, and each node is priced at the cheapest
// type that holds it. The new claims are kept when they save at least 2%. Pinned domains
// (zone, capacity type) are part of a claim's requirement set, so pods counted by zonal groups
// move only within their domain and no count changes. Then fillRoom (fillroom.go) fills the
// idle room of claims whose pods all stay (a pod alone by hostname anti-affinity on a type
// sized by its memory, say) with pods from other claims that hostname groups may count but no
// pod there owns, keeping every non-hostname domain; a donor's moves are kept when it drops
// to a cheaper type.
//
// Predicting Solve. Placement (placement.go) compiles the same constraints with the same
// functions for callers that must predict Solve without running it on the whole cluster:
// pkg/disruption's packer takes every constraint it knows from there, so a constraint is taught
// once, here (recipe in placement.go).
//
// Topology. A claim's domain for a topology key (zone, capacity type, or any label with known
// values) is decided ("pinned") as soon as a pod constrained by, or counted by, a group on
// that key joins it, so counts are always exact; hostname domains are the claims themselves.
package scheduling
