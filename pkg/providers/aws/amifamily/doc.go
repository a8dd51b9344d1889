// Package amifamily knows the AMI families (AL2, AL2023, Bottlerocket,
// Windows 2019/2022/2025, Custom) and resolves an EC2NodeClass's
// amiSelectorTerms to AMIs.
//
// An alias (family@version) is resolved through the public SSM parameters
// AWS publishes for the cluster's Kubernetes version (EKS DescribeCluster, or
// the API server's version when the cluster is not an EKS cluster), one
// parameter per architecture and accelerator variant; the variant decides the
// AMI's requirements (an nvidia AMI needs a GPU instance type, a standard one
// an instance type without accelerators). Other terms go to EC2
// DescribeImages: ids, names (owned by the account or Amazon unless an owner
// is given), owners, tags, or an SSM parameter holding an id. For every
// distinct requirement set the newest non-deprecated image wins; a deprecated
// image is used only when nothing else matches.
//
// Families carries per-family facts other packages need (root and ephemeral
// devices, default block devices, OS, kubelet features).
//
// The Resolver (resolve.go) turns a class, a NodeClaim and candidate
// instance types into launch template option sets: it gives every instance
// type the newest AMI of status.amis it can boot, splits the types by the
// max pods their kubelet must be told, by the kube- and system-reserved
// their kubelet expressions evaluate to (feature gate NodeClassCEL) and by
// EFA count, and fills each set
// with the family's user data (package bootstrap), block device and
// metadata defaults, and the labels and taints the node registers with.
package amifamily
