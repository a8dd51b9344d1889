// Package nodeclaim groups the controllers that own NodeClaims once the
// provisioner created them: lifecycle (launch, registration, initialization,
// liveness and the finalizer), garbagecollection (cloud instances against
// NodeClaims), podevents (status.lastPodEventTime), disruption (the
// Consolidatable and Drifted conditions) and expiration (expireAfter);
// metrics holds the NodeClaim and Node metrics they record. They are wired,
// with the Node termination controller (pkg/controllers/node/termination)
// that drains deleted Nodes, by pkg/controllers (NodeLifecycle).
package nodeclaim
