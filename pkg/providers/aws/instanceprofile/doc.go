// Package instanceprofile manages the IAM instance profiles of
// EC2NodeClasses.
//
// For spec.role Karpenter creates a profile, adds the role, tags it, reuses
// it on every later reconcile and deletes it with the EC2NodeClass. It follows
// upstream's v1.14 scheme: the name is <cluster>_<hash of region, class name
// and a random UUID> (a new name per profile, so a re-created class never
// races IAM's eventual consistency on an old name) and the IAM path is
// /karpenter/<region>/<cluster>/<class UID>/, which is how Karpenter finds the
// profiles of a class again (to reuse one whose name never reached the
// status, and to delete them all). Tags: spec.tags plus
// kubernetes.io/cluster/<cluster>: owned, eks:eks-cluster-name,
// karpenter.k8s.aws/ec2nodeclass and topology.kubernetes.io/region.
//
// spec.instanceProfile names a profile the user manages; Karpenter only checks
// that it exists. Existence answers are cached for upstream's 15 minutes.
package instanceprofile
