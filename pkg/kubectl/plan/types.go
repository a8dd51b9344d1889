package plan

// Plan is what Karpenter would do next. Its JSON/YAML form (-o json|yaml) is
// a stable interface for scripts: fields are only ever added.
type Plan struct {
	// Source of the snapshot: "cluster https://..." or "dump FILE".
	Source string `json:"source"`
	// Provider whose instance types were planned with ("kwok", "aws").
	Provider string `json:"provider"`
	// Notes: how the snapshot was edited (manifests applied, deletions,
	// scaling, conversions) and anything the planner assumed.
	Notes []string `json:"notes,omitempty"`
	// Launches are the NodeClaims provisioning would create for pending pods.
	Launches []Launch `json:"launches"`
	// Disruptions are the disruption decisions, in the order they would be
	// taken (each pass after the previous one's decision started).
	Disruptions []Disruption `json:"disruptions"`
	// Pending are pods that would stay pending, with each NodePool's reason.
	Pending []PendingPod `json:"pending"`
	// Static are the static NodePools (spec.replicas) the controller acts on
	// and what it does to hold their replicas.
	Static []StaticPool `json:"static,omitempty"`
	// Buffers are the CapacityBuffers the controller acts on and where the
	// provisioning step keeps their chunks.
	Buffers []Buffer `json:"buffers,omitempty"`
	// Blocked are nodes a disruption method wants but leaves alone, with why
	// (the DisruptionBlocked / Unconsolidatable explanations), after the last step.
	Blocked []Blocked `json:"blocked"`
	// Budgets that allow no disruption after the last step.
	Budgets []Budget `json:"budgets"`
	// CostPerHourBefore is the $/h of the nodes and NodeClaims now;
	// CostPerHourAfter once every launch and disruption of the plan is done.
	CostPerHourBefore float64 `json:"costPerHourBefore"`
	CostPerHourAfter  float64 `json:"costPerHourAfter"`
	// LowerBoundPerHour is a floor under the $/h of any fleet that runs the
	// same pods from these NodePools (scheduling.LowerBound); 0 when unknown.
	LowerBoundPerHour float64 `json:"lowerBoundPerHour,omitempty"`
	// Unpriced counts nodes whose price is unknown (left out of the costs).
	Unpriced int `json:"unpriced,omitempty"`
	// StepsTruncated is set when disruption steps stopped at --max-steps.
	StepsTruncated bool `json:"stepsTruncated,omitempty"`
}

// Launch is one NodeClaim to create.
type Launch struct {
	// Name the planner gave the NodeClaim ("<nodepool>-plan-N"); the real one
	// gets a generated name.
	Name     string `json:"name"`
	NodePool string `json:"nodePool"`
	// InstanceType is the cheapest compatible type, the one launched when
	// available; InstanceTypeOptions counts the types the NodeClaim allows.
	InstanceType        string  `json:"instanceType"`
	InstanceTypeOptions int     `json:"instanceTypeOptions"`
	Zone                string  `json:"zone"`
	CapacityType        string  `json:"capacityType"`
	PricePerHour        float64 `json:"pricePerHour"`
	// Requests: the pods' requests plus DaemonSet overhead.
	Requests string `json:"requests"`
	// Pods it is for (namespace/name).
	Pods []string `json:"pods"`
	// For is "provisioning" or the disruption step it replaces nodes for ("disruption 1").
	For string `json:"for"`
}

// Disruption is one disruption decision.
type Disruption struct {
	Step int `json:"step"`
	// Method: emptiness, drift, multi-node consolidation, single-node consolidation.
	Method string `json:"method"`
	// Reason: the NodePool budget reason (Empty, Drifted, Underutilized).
	Reason string `json:"reason"`
	// Action: delete or replace.
	Action string `json:"action"`
	// Nodes to remove, with their NodePools.
	Nodes     []string `json:"nodes"`
	NodePools []string `json:"nodePools"`
	// Explanation in the controller's words.
	Explanation string `json:"explanation"`
	// Replacements launched before the nodes go (names of Launches in the
	// Replacements list).
	Replacements []Launch `json:"replacements,omitempty"`
	// PricePerHourRemoved and PricePerHourAdded: the candidates' and the
	// replacements' $/h.
	PricePerHourRemoved float64 `json:"pricePerHourRemoved"`
	PricePerHourAdded   float64 `json:"pricePerHourAdded"`
}

// Buffer is a CapacityBuffer's chunks in the plan.
type Buffer struct {
	// Buffer is namespace/name.
	Buffer string `json:"buffer"`
	// Chunks the buffer holds; of them, kept on existing (or starting)
	// capacity, on NodeClaims the plan launches, and with no place.
	Chunks             int `json:"chunks"`
	OnExistingCapacity int `json:"onExistingCapacity"`
	Launched           int `json:"launched"`
	NoPlace            int `json:"noPlace"`
}

// PendingPod is a pod that no NodePool or existing node can take.
type PendingPod struct {
	Pod string `json:"pod"`
	// Reasons, one per NodePool (and existing capacity), in the solver's words.
	Reasons []string `json:"reasons"`
}

// Blocked is a node a disruption method wanted but did not disrupt.
type Blocked struct {
	Node      string `json:"node"`
	NodeClaim string `json:"nodeClaim,omitempty"`
	NodePool  string `json:"nodePool"`
	Method    string `json:"method"`
	// Code: DoNotDisrupt, PodDisruptionBudget, DisruptionBudget,
	// Unconsolidatable, ConsolidationDisabled, NotInitialized, ...
	Code    string `json:"code"`
	Message string `json:"message"`
	// Blocking: a rule or budget keeps the node (event DisruptionBlocked),
	// rather than consolidation finding nothing better (Unconsolidatable).
	Blocking bool `json:"blocking"`
}

// Budget is a NodePool disruption budget that allows nothing.
type Budget struct {
	NodePool   string `json:"nodePool"`
	Reason     string `json:"reason"`
	Limit      int    `json:"limit"`
	Disrupting int    `json:"disrupting"`
	Allowed    int    `json:"allowed"`
	Message    string `json:"message"`
}

// StaticPool is one static NodePool's step: NodeClaims launched up to its
// replicas (in Launches, for "static nodepool NAME") or nodes above them
// removed.
type StaticPool struct {
	NodePool string `json:"nodePool"`
	Replicas int64  `json:"replicas"`
	// Current counts its NodeClaims not on their way out.
	Current int `json:"current"`
	// Launch: NodeClaims to create; AtLimit: limits.nodes holds them back.
	Launch  int  `json:"launch"`
	AtLimit bool `json:"atLimit,omitempty"`
	// Remove: nodes above the replicas, in the order they go.
	Remove []string `json:"remove,omitempty"`
}
