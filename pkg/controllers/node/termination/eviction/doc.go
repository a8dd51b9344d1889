// Package eviction is the queue through which node termination evicts pods.
//
// Every eviction goes through the Eviction API (a policy/v1 Eviction posted to
// the pod's eviction subresource), so the API server decides whether a
// PodDisruptionBudget allows it. It decides from the budget's status, which
// can lag the pods (seconds after an API server restart): before asking, the
// queue counts the budget's healthy pods in its own cache and waits while
// evicting a healthy pod would leave fewer than status.desiredHealthy, even
// though the status still allows a disruption (pdbShortfall). A refusal (429 Too Many Requests
// from a PDB, or 500 when several PDBs select the pod) is not an error: the pod
// stays in the queue and is retried with a per-pod exponential backoff
// (BaseDelay doubling up to MaxDelay), measured on the queue's clock, while a
// Warning event on the Node says which pod waits and why. A successful
// eviction is recorded as an Evicted event on the pod.
//
// The queue only knows pods. Which pods to evict, in which order, and when a
// node counts as drained is decided by the drain of the termination
// controller, which adds pods here and reads back why a pod is still waiting.
package eviction
