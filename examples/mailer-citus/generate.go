package main

//go:generate go run github.com/queuegen/queuegen/cmd/queuegen generate
