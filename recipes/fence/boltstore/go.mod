module github.com/zkflow/zkflow/recipes/fence/boltstore

go 1.25.0

require (
	github.com/zkflow/zkflow v0.0.0
	go.etcd.io/bbolt v1.4.3
	go.uber.org/goleak v1.3.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	golang.org/x/sys v0.45.0 // indirect
)

replace github.com/zkflow/zkflow => ../../..
