/**
 * Where the services are: Kafka, the schema registry, Redis and MinIO, with their credentials.
 * The runner reads them from the environment (`processors/runner/endpoints.ts`); the stores
 * and the schemas take them as they are, so the type lives below all of them.
 */
export interface Endpoints {
  kafkaBrokers: string[];
  registryUrl: string;
  /** `OZ0_REDIS_URL`: one node's URL, or a Redis Cluster's seed nodes separated by commas. */
  redisUrl: string;
  /** `OZ0_REDIS_CLUSTER`: whether Redis is a cluster, when the URL alone does not say (`store/redis/client.ts`). */
  redisCluster?: boolean;
  /** `OZ0_REDIS_USERNAME`: a Redis ACL user kept out of the URL (`store/redis/client.ts`). */
  redisUsername?: string;
  /** `OZ0_REDIS_PASSWORD`: Redis AUTH kept out of the URL, so the URL can be shown. */
  redisPassword?: string;
  minioUrl: string;
  minioAccessKey: string;
  minioSecretKey: string;
}
