// Package instance launches, describes, lists and terminates the EC2
// instances behind NodeClaims. A launch is one instant EC2 Fleet over every
// compatible instance type × zone (cheapest 60 types, each zone's subnet with
// the most free addresses), batched with concurrent launches of identical
// shape; pools EC2 cannot fill are remembered as unavailable offerings so the
// next attempt, and the scheduler, go elsewhere.
package instance
