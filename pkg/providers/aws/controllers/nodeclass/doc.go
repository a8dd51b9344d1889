// Package nodeclass is the EC2NodeClass controller: it resolves the selector
// terms, the instance profile and the dry-run launch authorization of every
// EC2NodeClass into its status, as upstream Karpenter v1 writes it
// (status.subnets, securityGroups, amis, instanceProfile and the conditions
// SubnetsReady, SecurityGroupsReady, AMIsReady, InstanceProfileReady and
// ValidationSucceeded, which roll up into Ready), plus
// status.capacityReservations and CapacityReservationsReady, which joins
// Ready only for classes with capacityReservationSelectorTerms, and
// PlacementGroupReady (part of Ready, as upstream): True without a
// placementGroupSelector or when it resolves to an available placement
// group, False (PlacementGroupNotFound) naming the field otherwise. Upstream
// has no status field for the group; launches resolve it through the same
// cache.
//
// A condition that is False says which field is wrong and why, naming the
// selector term that matched nothing ("subnetSelectorTerms[1] matched no
// subnet: tags {...}"), the alias the cluster has no AMIs for, the role that
// does not exist or the EC2 action the controller may not call. When AWS cannot
// be asked (throttling beyond the SDK's retries, an outage) the last answer
// stays and the error is retried with backoff.
//
// Resolution repeats on upstream's intervals (subnets and AMIs every refresh
// interval, 1 minute by default; security groups every 5 minutes); the
// providers' caches keep the AWS calls per interval to one per distinct term.
//
// The finalizer karpenter.k8s.aws/termination keeps a deleted EC2NodeClass
// while NodeClaims still use it (an event names them) and, once they are gone,
// deletes the launch templates Karpenter created for it and the instance
// profile it created for spec.role.
//
// HashController (a controller of its own, nodeclass.hash) keeps the
// annotations karpenter.k8s.aws/ec2nodeclass-hash and -hash-version current.
package nodeclass
