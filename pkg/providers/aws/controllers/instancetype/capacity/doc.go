// Package capacity teaches the instance type provider the memory nodes really
// have, as upstream's providers.instancetype.capacity controller does.
//
// The memory of an instance type is only estimated before any node of it
// exists: what EC2 describes less VM_MEMORY_OVERHEAD_PERCENT. A registered
// node reports the real figure, and when it runs the AMI its EC2NodeClass
// would launch the type with today, that figure replaces the estimate for
// later launches of the type (instancetype.Provider.UpdateCapacityFromNode).
// A pod that fits the estimate but not the real node then no longer gets a
// node of that type, which would have left it pending.
//
// Nodes are looked at once: when they appear registered (which includes every
// registered node the controller lists at start, so what was learnt before a
// restart is learnt again: nothing is kept elsewhere) and when the
// karpenter.sh/registered label is added.
package capacity
