// Package pages reads an AWS SDK paginator to its end. Every Describe*/List* call the
// providers make is paginated, and each read the same loop (ask while pages remain, stop at
// the first error, keep what each page yields); Collect is that loop once.
package pages

import "context"

// Paginator is what every aws-sdk-go-v2 paginator offers, whatever its service's Options type.
type Paginator[Out, Opts any] interface {
	HasMorePages() bool
	NextPage(ctx context.Context, optFns ...func(*Opts)) (Out, error)
}

// Collect reads every page, letting add append what the page holds to the result, and
// returns the first error unchanged (callers wrap it with what they were listing).
func Collect[Out, Opts, T any](ctx context.Context, p Paginator[Out, Opts], add func(acc []T, page Out) []T) ([]T, error) {
	var acc []T
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		acc = add(acc, page)
	}
	return acc, nil
}
