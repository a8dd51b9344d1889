// Package kubeletcel evaluates the CEL expressions an EC2NodeClass may hold
// in spec.kubelet when the NodeClassCEL AWS feature gate is on: maxPods as a
// string, and any kubeReserved or systemReserved value that is not a
// resource quantity.
//
// An expression is evaluated once per instance type against these integer
// variables: vcpus, memory_mib, default_enis (network interfaces of the
// default network card), ips_per_eni (IPv4 addresses per interface) and
// max_pods (the node's pod count: for the maxPods expression itself the
// count it would have without one, for the reserved maps the resolved one),
// plus the string instance_type. Besides CEL's own operators and functions,
// max(a, b) and min(a, b) take any mix of int and double. An expression must
// return an int or a double; a double is truncated toward zero.
//
// A reserved value's result is read in the unit users write for that
// resource: cpu in millicores rounded up to 10m, memory in MiB rounded up to
// 16Mi, ephemeral-storage in GiB; pid (and any other key) is a bare count.
// A result that is negative, or that fails to evaluate, leaves the entry out,
// so the default reservation for that resource applies.
//
// Compiled programs are cached by expression text; an Environment is safe
// for concurrent use.
package kubeletcel
