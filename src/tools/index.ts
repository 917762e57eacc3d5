/** Model-facing tools: the tool definition type and the kind-agnostic task tools. */
export * from './tool-definition.js';
