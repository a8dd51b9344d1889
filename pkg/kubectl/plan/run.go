package plan

import (
	"context"
	"fmt"
	"io"

	"github.com/karpenter-go/karpenter/pkg/kubectl/kubeflags"
)

// Run is the `kubectl karpenter plan` subcommand.
func Run(ctx context.Context, flags kubeflags.Flags, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "plan: not implemented yet")
	return 1
}
