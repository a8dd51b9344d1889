// Package batcher merges concurrent EC2 requests into one call, as upstream
// Karpenter does: a burst of NodeClaims becomes one CreateFleet with
// TotalTargetCapacity equal to the burst, and instance look-ups and
// terminations share DescribeInstances and TerminateInstances calls. A batch
// closes when no request joined it for an idle window (35 ms by default) or
// when it has been open for the maximum window (1 s), or when it is full.
// Only requests that are identical apart from what is merged (capacity,
// instance ids) share a batch.
package batcher
