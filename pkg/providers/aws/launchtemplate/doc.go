// Package launchtemplate keeps the EC2 launch templates Karpenter launches
// with: one per resolved option set (AMI, user data, block devices, metadata
// options, security groups, instance profile, tags), named
// karpenter.k8s.aws/<hash of the option set>, so equal option sets share a
// template across NodeClaims and restarts. Templates are created on first
// use, cached for a minute after their last use, found again at start from
// their cluster tag, deleted when they leave the cache unused, and deleted
// together when their EC2NodeClass goes.
package launchtemplate
