package pricing

//go:generate go run ../../../../hack/code/factsgen -table prices -out zz_generated.prices.go
