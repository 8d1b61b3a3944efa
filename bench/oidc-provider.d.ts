/** The part of node-oidc-provider 9 the bench's peer uses (the package ships no types). */
declare module 'oidc-provider' {
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    /** Provider is a Koa application. */
    listen(port: number, host: string, listening: () => void): unknown;
  }
}
