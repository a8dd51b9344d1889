// Package legacy manages what an upstream Karpenter v0.31 install leaves in a
// cluster that switches to this controller: v1alpha5 Machines, the Nodes and
// instances behind them, and the Provisioners that made them. Nothing new is
// ever launched for a Provisioner; the Machines keep running, are finalized
// like NodeClaims when deleted, and move their workloads onto NodePool
// capacity along the three paths of upstream's v0.32 migration guide.
//
// Marking. Every Machine carries two conditions written here:
//
//   - Adopted=True (reason Adopted): this controller manages the Machine;
//     its Node and instance are left running until one of the paths below
//     retires them. A Machine whose NodePool successor is missing says so in
//     the message (reason NoNodePool) - its pods would have nowhere to go.
//   - MachineDrifted (upstream v1alpha5's condition type): True when the
//     Machine no longer matches its Provisioner, with the reason
//     ProvisionerDrifted (taints, startup taints, labels or providerRef
//     changed; the message names the field), ProvisionerNotFound (deleted
//     with --cascade=orphan) or ProvisionerDeleting.
//
// The three paths:
//
//  1. Drift (taint or otherwise change the Provisioner): the Replacer takes
//     drifted Machines one pass at a time within the Drifted budget of the
//     NodePool that succeeds the Provisioner (the NodePool of the same name,
//     as karpenter-convert names it, else the only NodePool; its budgets
//     count the Provisioner's legacy nodes). For each it taints the node
//     karpenter.sh/disrupted:NoSchedule, solves the node's pods against the
//     NodePools alone (legacy nodes are never a destination), creates the
//     replacement NodeClaims, and deletes the Machine only once they are
//     Initialized - replacement first, as upstream's drift does. Pods that
//     fit no NodePool (e.g. they select karpenter.sh/provisioner-name) stop
//     the replacement: the Machine keeps running, and the MachineDrifted
//     message and an event name the pods (karpenter-convert report lists
//     the selectors to fix).
//  2. kubectl delete provisioner X (cascade): the garbage collector deletes
//     the Machines, each is finalized as in 3.
//  3. kubectl delete machine / kubectl delete node: the Terminator deletes
//     the other object of the pair; the Node's karpenter.sh/termination
//     finalizer (package node/termination: taint, drain in tiers through
//     the Eviction API so PDBs hold, karpenter.sh/do-not-disrupt and the
//     legacy karpenter.sh/do-not-evict pods waited for) drains it while the
//     provisioner launches NodePool capacity for its pods (a Node being
//     deleted is deleting capacity); then the instance is terminated
//     through the CloudProvider by provider ID and only then the Machine's
//     finalizer is removed, so no instance outlives its Machine.
package legacy
