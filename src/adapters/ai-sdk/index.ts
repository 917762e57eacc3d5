/** The Vercel AI SDK adapter: tools from Errand definitions, and notifications through steering. Needs `ai`. */

export { type AiSdkModelOptions, createAiSdkModel, toSdkMessages } from './ai-sdk-model.js';
export {
  AI_SDK_BRIDGE_DEFAULTS,
  AI_SDK_STEERING_SOURCE,
  type AiSdkNotificationBridge,
  type AiSdkNotificationBridgeOptions,
  type AiSdkToldTaskEnd,
  createAiSdkNotificationBridge,
} from './ai-sdk-notifications.js';
export { type AiSdkToolsOptions, toAiSdkTool, toAiSdkTools } from './ai-sdk-tools.js';
