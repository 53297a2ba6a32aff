/** Configuration as data: agent definitions, plugin manifests and tenant settings, validated and resolved. */
export { ConfigError, formatConfigIssue, type ConfigIssue, type ConfigWarning, type Parsed } from "./errors.ts";
export * from "./units.ts";
export type { EffectiveLoops, EffectiveSpend, EffectiveTreeLimits, LimitSetting, LoopSettings, OnLoop, SpendSettings, TreeLimitKey, TreeLimitSettings } from "./limits.ts";
export { ON_LOOP, TREE_LIMIT_KEYS } from "./limits.ts";
export * from "./defaults.ts";
export { parseAgent, ON_BUDGET, ON_UNKNOWN, RESERVE, type AgentDefinition, type DelegationSettings, type JobLimits, type OnBudget, type OnUnknown, type Reserve } from "./agent.ts";
export { parseTenant, type TenantOffload, type TenantSettings } from "./tenant.ts";
export { diffTenant, tenantChange, type FieldChange, type TenantChange, type TenantChangeRequest } from "./tenant-change.ts";
export {
  budgetFillInFunctions,
  followsFitConvention,
  lintPlugin,
  parsePlugin,
  VIEWS,
  type JsonSchema,
  type PluginFunction,
  type PluginManifest,
  type PluginTool,
  type View,
} from "./plugin.ts";
export * from "./resolve.ts";
export { loadConfigDir, recordKey, toConfigRecords, toTableRecords, type LoadedConfig, type TableRecord } from "./load.ts";
