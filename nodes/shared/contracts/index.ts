export * from './envelope';
export * from './ctx';
export * from './errorContext';
export * from './telegramUpdate';
