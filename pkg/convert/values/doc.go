// Package values migrates Helm values of the karpenter chart from v0.3x
// (settings.aws.*, defaultInstanceProfile, interruptionQueueName, the
// validating webhook, logConfig) to the v1 chart's values, and finds the old
// keys in a values file without rewriting it (karpenter-convert report).
//
// It is pure: a values tree in, a values tree and notes out. Every moved,
// renamed or dropped key gets a note saying where it went, so nothing
// disappears silently; keys the v1 chart does not know are kept (helm
// template then names them, through the chart's values.schema.json) and
// noted.
package values
