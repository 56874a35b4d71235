module github.com/zkflow/zkflow/examples/fence

go 1.25.0

require github.com/zkflow/zkflow v0.0.0

replace github.com/zkflow/zkflow => ../..

require (
	github.com/zkflow/zkflow/recipes/fence/boltstore v0.0.0
	go.etcd.io/bbolt v1.4.3
	go.uber.org/goleak v1.3.0
)

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	golang.org/x/sys v0.45.0 // indirect
)

replace github.com/zkflow/zkflow/recipes/fence/boltstore => ../../recipes/fence/boltstore
