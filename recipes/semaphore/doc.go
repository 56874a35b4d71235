// Package semaphore is a counting semaphore on ZooKeeper.
package semaphore
