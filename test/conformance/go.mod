module github.com/aro/conformance

go 1.25.3

require (
	github.com/actions/scaleset v0.4.0
	github.com/google/uuid v1.6.0
)

require (
	github.com/golang-jwt/jwt/v4 v4.5.2 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
)
