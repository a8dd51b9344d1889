// Package ownedconditions writes the NodeClaim status conditions one controller
// owns without touching the others, and without an optimistic lock.
//
// Several controllers write conditions on the same NodeClaim: lifecycle
// (Launched, Registered, Initialized and the Ready they roll up into) and
// disruption candidacy (Consolidatable, Drifted), among others. A JSON merge
// patch replaces the conditions list as a whole, so such a write had to be
// conditional on the resourceVersion it read, or it would drop a condition
// another controller wrote meanwhile; on a busy cluster each of those writes
// then lost to the other about as often as it won (about 1,300 409 Conflict
// answers per 500 nodes provisioned), and every loss was a requeue, a fresh
// read and a second write.
//
// Instead each controller server-side applies only its own conditions under
// its own field manager: the NodeClaim CRD keys status.conditions by type
// (listType=map), so the API server merges the applied entries into the list
// and keeps the others. An entry the controller stops sending is removed,
// because its manager owns it. Nothing is conditional, so nothing conflicts;
// what a controller writes it computed from the NodeClaim as it read it, as
// before.
package ownedconditions
