// Package lifecycle drives a NodeClaim from creation to a working node and
// back: launch (CloudProvider.Create; a NodeClaim whose NodeClass is not
// ready, or for which no capacity is available, is deleted at once),
// registration (the Node for the instance joined: labels, taints and finalizer
// synced, unregistered taint removed), initialization (the Node is Ready,
// startup and boot taints are gone, requested extended resources are
// allocatable) and liveness (a NodeClaim that does not launch within 5 minutes
// or register within 15 is deleted: karpenter_nodeclaims_disrupted_total
// reasons launch_timeout and registration_timeout). Each step is its
// own small type with one concern; Controller runs them in order and writes the
// NodeClaim back once, only when its conditions or fields changed. NodeClaim
// status writes are the API server's costliest requests, so a pass starts from
// lifecycle's own last write when the cached copy is older (readOwnWrites), and
// a Node that joins Ready is registered and initialized in one write (pass).
//
// Deletion is handled by Terminator: it records the termination deadline
// (terminationGracePeriod), deletes the NodeClaim's Node and waits for the
// Node's own finalizer (pkg/controllers/node/termination), which drains the
// node and deletes the instance; then it makes sure the instance is gone and
// removes the NodeClaim's finalizer. A Node deleted directly deletes its
// NodeClaim from that controller, so both paths meet.
package lifecycle
