// Package instancetype turns what EC2 says about instance types
// (DescribeInstanceTypes, DescribeInstanceTypeOfferings) into the solver's
// scheduling.InstanceType for one EC2NodeClass: the labels a node of the type
// carries (requirements), its capacity, the overhead the kubelet and the OS
// hold back, and one offering per subnet zone and capacity type with its price
// and availability.
//
// The math (capacity.go, requirements.go) is pure: it reads an
// ec2types.InstanceTypeInfo, the EC2NodeClass and the options, and nothing else.
// Provider adds the EC2 calls and the caches around it (5 minutes for the EC2
// data and the resolved types, as upstream), and UnavailableOfferings
// remembers offerings EC2 recently had no capacity for (3 minutes).
//
// Memory is the one estimate that registered nodes correct: once a node of a
// type has reported its memory capacity, that figure replaces the
// VM_MEMORY_OVERHEAD_PERCENT estimate for the type under the same AMIs
// (discovered.go, fed by the capacity controller), for 60 days as upstream.
//
// The AMI family matters here only for its default root volume, its pod-density
// and reserved-memory rules and the Windows build label; they come from the
// amifamily package's table, the one EC2NodeClass resolution uses (family.go).
package instancetype
