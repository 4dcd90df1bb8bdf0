module github.com/cosla/cosla

go 1.26

require (
	github.com/cockroachdb/datadriven v1.0.3 // indirect
	github.com/google/btree v1.1.3
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
