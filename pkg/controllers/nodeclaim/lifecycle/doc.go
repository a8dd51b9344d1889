// Package lifecycle drives a NodeClaim from creation to a working node and
// back: launch (CloudProvider.Create), registration (the Node for the instance
// joined: labels, taints and finalizer synced, unregistered taint removed),
// initialization (the Node is Ready, startup and boot taints are gone, requested
// extended resources are allocatable) and liveness (a NodeClaim that does not
// launch within 5 minutes or register within 15 is deleted). Each step is its
// own small type with one concern; Controller runs them in order and writes the
// NodeClaim back once.
//
// Deletion is handled by Terminator: for now it deletes the instance until the
// cloud provider reports it gone, then removes the Node and the finalizers.
// Graceful draining (taint, evict, wait for volumes) belongs in front of it and
// is added by the termination work that follows; Terminator.Finalize is the
// place it hooks into. NodeTerminationController turns the deletion of a Node
// into the deletion of its NodeClaim, so both paths end in Finalize.
package lifecycle
