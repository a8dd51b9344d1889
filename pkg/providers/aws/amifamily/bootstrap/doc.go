// Package bootstrap writes the user data that makes an EC2 instance join the
// cluster as a node, one format per AMI family:
//
//   - AL2: a MIME multi-part archive whose last part is a shell script that
//     merges the kubelet fields Karpenter does not read into the AMI's
//     kubelet-config.json, then runs /etc/eks/bootstrap.sh with the others
//     as flags;
//   - AL2023: a MIME multi-part archive whose last part is a nodeadm
//     NodeConfig (node.eks.aws/v1alpha1);
//   - Bottlerocket: a TOML document of settings.kubernetes.*;
//   - Windows2019/2022/2025: a PowerShell block calling Start-EKSBootstrap.ps1
//     with kubelet flags;
//   - Custom: the class's userData, unchanged.
//
// UnappliedKubelet names the spec.kubelet fields a family cannot write
// (kubelet_fields.go); the EC2NodeClass controller refuses classes that set
// them.
//
// The class's own userData is merged in: its MIME parts (or its script or
// NodeConfig, wrapped in a part) come first and Karpenter's part last, so that
// on AL2023, where nodeadm merges NodeConfigs in order, Karpenter's settings
// win (the v1 rule); Bottlerocket's TOML is parsed and Karpenter's keys
// overwrite the user's while the user's other settings are kept.
//
// The package is pure: no clients, no clock. Output is deterministic (map keys
// sorted) so that equal inputs give equal launch templates.
package bootstrap
