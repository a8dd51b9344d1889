package v1

// Hash of the EC2NodeClass's static spec fields (selector terms excluded: they
// drift through status). Stamped on NodeClaims as karpenter.k8s.aws/ec2nodeclass-hash.
func (in *EC2NodeClass) Hash() string { return "" }
