module github.com/zkflow/zkflow

go 1.26.8

require (
	github.com/benbjohnson/clock v1.3.5 // indirect
	github.com/go-zookeeper/zk v1.0.4 // indirect
	go.uber.org/goleak v1.3.0 // indirect
)
