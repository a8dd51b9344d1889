package instancetype

//go:generate go run ../../../../hack/code/factsgen -table vpclimits -out zz_generated.vpclimits.go
//go:generate go run ../../../../hack/code/factsgen -table bandwidth -out zz_generated.bandwidth.go

// vpcLimit is what the VPC CNI and the VPC resource controller know about a
// type's ENIs beyond DescribeInstanceTypes.
type vpcLimit struct {
	ipv4PerInterface int32
	branchInterfaces int32
	trunking         bool
}
